#!/usr/bin/env bash
# mixin_test.sh: the shipped rules and dashboard are what the mixin generates.
#
#   deploy/mixin/generate.sh into a temporary directory, then diff with
#     deploy/prometheus/hotkeyd.rules.yml and deploy/grafana/hotkeyd-dashboard.json:
#     any difference means the shipped files are stale (run deploy/mixin/generate.sh);
#   mixin.libsonnet has the monitoring-mixins fields (prometheusAlerts, prometheusRules,
#     grafanaDashboards, _config), and an override of _config reaches the output;
#   the jsonnet sources are formatted as jsonnetfmt writes them.
#
# Usage: tests/deploy/mixin_test.sh [REPO_ROOT]. Needs jsonnet and python3-yaml.
set -euo pipefail
root=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"}
mixin=$root/deploy/mixin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v jsonnet >/dev/null || fail "jsonnet not found (apt-get install jsonnet)"

"$mixin/generate.sh" "$tmp"
for f in prometheus/hotkeyd.rules.yml grafana/hotkeyd-dashboard.json; do
  if ! diff -u "$root/deploy/$f" "$tmp/$f" >"$tmp/diff"; then
    head -n 40 "$tmp/diff" >&2
    fail "deploy/$f is stale: run deploy/mixin/generate.sh and commit the result"
  fi
done
echo "ok: the shipped rules and dashboard are the mixin's output"

fields=$(jsonnet -J "$mixin" -e 'local m = import "mixin.libsonnet";
  std.join(" ", [f for f in ["prometheusAlerts", "prometheusRules", "grafanaDashboards", "_config"]
                 if std.objectHasAll(m, f)])')
[ "$fields" = '"prometheusAlerts prometheusRules grafanaDashboards _config"' ] ||
  fail "mixin.libsonnet exposes only $fields"
# _config reaches the rules: another job selector and page level, and the cluster topk.
jsonnet -J "$mixin" -e '
  local m = (import "mixin.libsonnet") + { _config+:: { hotkeydSelector: "job=\"kv\"", pageLoadRatio: 1 } };
  local rules = { [r.alert]: r for r in m.prometheusAlerts.groups[0].rules };
  assert rules.HotkeydDown.expr == "up{job=\"kv\"} == 0" : rules.HotkeydDown.expr;
  assert std.length(std.findSubstr(") > 1\n", rules.HotkeydHotKeyCritical.expr)) == 1 : rules.HotkeydHotKeyCritical.expr;
  assert std.length(std.findSubstr("pages above 100%", rules.HotkeydHotKeyCritical.annotations.description)) == 1;
  local cl = (import "mixin.libsonnet") + { _config+:: { clusterTopK: 5 } };
  local rec = { [r.record]: r for g in cl.prometheusRules.groups for r in g.rules };
  assert rec["cluster_node_slot:hotkey_slot_share_ratio:topk"].expr ==
    "topk by (cluster) (5, max by (cluster, node, slot) (hotkey_slot_share_ratio))" : rec["cluster_node_slot:hotkey_slot_share_ratio:topk"].expr;
  local page = { [r.alert]: r for r in ((import "mixin.libsonnet") + { _config+:: { pageLoadRatio: 1 } }).prometheusAlerts.groups[0].rules };
  assert std.length(std.findSubstr("> 1\n)", page.HotkeydHotSlotMoveCritical.expr)) == 1 : page.HotkeydHotSlotMoveCritical.expr;
  true' >/dev/null || fail "a _config override does not reach the rules"
echo "ok: mixin fields and _config overrides"

if command -v jsonnetfmt >/dev/null; then
  find "$mixin" -name '*.libsonnet' -print0 | xargs -0 jsonnetfmt --test ||
    fail "jsonnet sources are not formatted: jsonnetfmt -i deploy/mixin/**/*.libsonnet"
  echo "ok: jsonnetfmt"
fi
