#!/usr/bin/env bash
# alertmanager_test.sh: the shipped Alertmanager config, against a real Alertmanager.
#
#   1. `amtool check-config deploy/alertmanager/alertmanager.yml`;
#   2. routing (`amtool config routes test`): severity=critical goes to the pager receiver,
#      severity=warning to the ticket receiver;
#   3. starts Alertmanager (Debian's prometheus-alertmanager, loopback, no clustering) with
#      that config, posts alerts as Prometheus would, and asserts through /api/v2/alerts
#      that the inhibit rule mutes exactly the HotkeydHotKey warning that has a
#      HotkeydHotKeyCritical for the same key and target (also when neither carries the
#      optional cluster/shard labels), and no warning of another key, another shard, or
#      another alert.
#
# Usage: tests/deploy/alertmanager_test.sh [REPO_ROOT]   (default: two levels above this script)
# Needs amtool and prometheus-alertmanager (Debian package prometheus-alertmanager), curl,
# python3. Every wait is bounded; runs in a few seconds.
set -euo pipefail

root=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"}
config="$root/deploy/alertmanager/alertmanager.yml"
for t in amtool prometheus-alertmanager curl python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t (apt-get install prometheus-alertmanager)" >&2; exit 1; }
done

source "$root/tests/lib/e2e.sh"
e2e_init alertmanager

amtool check-config "$config" >"$tmp/check.log" || { cat "$tmp/check.log"; fail "amtool check-config"; }
log "ok: amtool check-config"

route() { amtool config routes test --config.file="$config" "$@" 2>/dev/null; }
[ "$(route alertname=HotkeydHotKeyCritical severity=critical)" = pager ] || fail "critical is not routed to pager"
[ "$(route alertname=HotkeydHotKey severity=warning)" = ticket ] || fail "warning is not routed to ticket"
log "ok: critical -> pager, warning -> ticket"

port=$(free_port tcp)
am="http://127.0.0.1:$port"
prometheus-alertmanager --config.file="$config" --storage.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$port" --cluster.listen-address= >"$tmp/alertmanager.log" 2>&1 &
pids+=($!)
wait_for 20 "alertmanager ready" curl -sf --max-time 2 "$am/-/ready"

# Alerts as Prometheus sends them (cluster="" or shard="" leaves that label out).
python3 - "$am" <<'PY'
import json, sys, urllib.request
def alert(name, sev, instance, key, cluster="c1", shard="s1"):
    labels = {"alertname": name, "severity": sev, "job": "hotkeyd", "instance": instance, "key": key}
    if cluster: labels["cluster"] = cluster
    if shard: labels["shard"] = shard
    return {"labels": labels, "annotations": {"summary": "test"}}
alerts = [
    # The pair: the warning is inhibited.
    alert("HotkeydHotKeyCritical", "critical", "10.0.0.1:10110", "user:42"),
    alert("HotkeydHotKey", "warning", "10.0.0.1:10110", "user:42"),
    # Another key on the same target: not inhibited.
    alert("HotkeydHotKey", "warning", "10.0.0.1:10110", "cart:9"),
    # The same key on another shard, which has no critical: not inhibited.
    alert("HotkeydHotKey", "warning", "10.0.0.2:10110", "user:42", shard="s2"),
    # Another alert of the same target: not inhibited.
    alert("HotkeydFeedSilent", "warning", "10.0.0.1:10110", "", cluster="c1"),
    # A pair without the optional target labels: inhibited.
    alert("HotkeydHotKeyCritical", "critical", "127.0.0.1:10110", "a b\"c", cluster="", shard=""),
    alert("HotkeydHotKey", "warning", "127.0.0.1:10110", "a b\"c", cluster="", shard=""),
]
for a in alerts:
    if not a["labels"]["key"]: del a["labels"]["key"]
req = urllib.request.Request(sys.argv[1] + "/api/v2/alerts", data=json.dumps(alerts).encode(),
                             headers={"Content-Type": "application/json"}, method="POST")
urllib.request.urlopen(req, timeout=5).read()
PY
log "ok: alerts posted"

# inhibited: prints "alertname instance key" of every inhibited alert, sorted; fails until
# all seven alerts are known.
inhibited() {
  curl -sf --max-time 5 "$am/api/v2/alerts" | python3 -c 'import json,sys
alerts=json.load(sys.stdin)
if len(alerts)!=7: sys.exit("have %d alerts" % len(alerts))
out=sorted("%s %s %s" % (a["labels"]["alertname"], a["labels"]["instance"], a["labels"].get("key","-"))
           for a in alerts if a["status"]["inhibitedBy"])
print("\n".join(out))'
}
want='HotkeydHotKey 10.0.0.1:10110 user:42
HotkeydHotKey 127.0.0.1:10110 a b"c'
check() { [ "$(inhibited)" = "$want" ]; }
wait_for 10 "exactly the paired warnings are inhibited" check
inhibited | sed 's/^/    inhibited: /' >&3
log "PASS"
