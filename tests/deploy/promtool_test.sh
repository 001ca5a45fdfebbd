#!/usr/bin/env bash
# promtool_test.sh: static checks of the Prometheus deploy files, no daemon needed.
#
#   promtool check rules   deploy/prometheus/hotkeyd.rules.yml   (syntax, PromQL, templates)
#   promtool check config  deploy/prometheus/scrape.yml          (and the rule file it names)
#   promtool test rules    deploy/prometheus/hotkeyd.rules.test.yml  (alert/recording unit tests)
#   the shortened copy made by shorten-for.sh still passes `check rules`, and differs from
#     the shipped file only in its `for:`/`keep_firing_for:` lines, all set to the asked value
#   check_dashboard_metrics.py against the sample exposition (and its own unit tests)
#   every alert's runbook_url anchor is a heading of deploy/README.md
#   the Kubernetes manifests parse as YAML
#
# Usage: tests/deploy/promtool_test.sh [REPO_ROOT]   (default: two levels above this script)
# Exits non-zero on the first failure. Needs promtool (Debian package `prometheus`) and
# python3 with python3-yaml. Runs in about a second.
set -euo pipefail

root=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"}
prom="$root/deploy/prometheus"
here="$root/tests/deploy"

command -v promtool >/dev/null || { echo "promtool not found (apt-get install prometheus)" >&2; exit 1; }

step() { printf '== %s\n' "$*"; }

step "promtool check rules"
promtool check rules "$prom/hotkeyd.rules.yml"

step "promtool check config"
promtool check config "$prom/scrape.yml"

step "promtool test rules"
promtool test rules "$prom/hotkeyd.rules.test.yml"

step "shorten-for.sh produces valid rules with only the asked durations"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$prom/shorten-for.sh" "$prom/hotkeyd.rules.yml" 5s > "$tmp/short.rules.yml"
promtool check rules "$tmp/short.rules.yml"
hold='^[[:space:]]*(for|keep_firing_for):'
shipped=$(grep -cE "$hold" "$prom/hotkeyd.rules.yml")
shortened=$(grep -cE "$hold 5s\$" "$tmp/short.rules.yml")
keep=$(grep -cE '^[[:space:]]*keep_firing_for: 5s$' "$tmp/short.rules.yml")
if [ "$shipped" -eq 0 ] || [ "$shipped" -ne "$shortened" ] || [ "$keep" -eq 0 ]; then
  echo "shorten-for.sh rewrote $shortened of $shipped 'for:'/'keep_firing_for:' lines ($keep keep_firing_for)" >&2
  exit 1
fi
# Everything except those lines is byte-identical.
if ! diff <(grep -vE "$hold" "$prom/hotkeyd.rules.yml") \
          <(grep -vE "$hold" "$tmp/short.rules.yml") >/dev/null; then
  echo "shorten-for.sh changed lines other than for:/keep_firing_for:" >&2
  exit 1
fi

step "dashboard and rules use only exported metric names"
python3 "$here/check_dashboard_metrics.py" "$root/deploy/grafana/hotkeyd-dashboard.json" \
  "$prom/hotkeyd.rules.yml" "$here/testdata/metrics.txt"
python3 "$here/check_dashboard_metrics_test.py" 2>&1 | tail -n 3

step "every runbook_url points to a heading of deploy/README.md"
python3 - "$prom/hotkeyd.rules.yml" "$root/deploy/README.md" <<'PY'
import re, sys, yaml
# GitHub's heading anchors: lower case, punctuation other than - and _ dropped, spaces to -.
anchors = {re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
           for m in re.finditer(r"^#+ (.*)$", open(sys.argv[2]).read(), re.M)}
bad = []
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
    for r in g["rules"]:
        url = (r.get("annotations") or {}).get("runbook_url")
        if url and url.split("#", 1)[-1] not in anchors:
            bad.append(f'{r["alert"]}: {url}')
if bad:
    sys.exit("runbook_url without a README heading:\n  " + "\n  ".join(bad))
print("ok: every runbook_url has its README section")
PY

step "Kubernetes manifests parse"
python3 - "$root/deploy/kubernetes" <<'PY'
import os, sys, yaml
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if f.endswith((".yaml", ".yml")):
        docs = [x for x in yaml.safe_load_all(open(os.path.join(d, f))) if x]
        for x in docs:
            assert {"apiVersion", "kind", "metadata"} <= x.keys(), (f, x.get("kind"))
        print(f"{f}: {', '.join(x['kind'] + '/' + x['metadata']['name'] for x in docs)}")
PY

step "all deploy checks passed"
