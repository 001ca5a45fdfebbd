#!/usr/bin/env bash
# prometheus_e2e.sh: hotkeyd + a real Prometheus + the shipped rules, end to end, on loopback.
#
# Usage:
#   tests/deploy/prometheus_e2e.sh HOTKEYD_BIN [HOTKEY_SIM_BIN]
#   tests/deploy/prometheus_e2e.sh --prometheus-only
#
# Full run (needs the daemon):
#   1. starts hotkeyd on free loopback ports and a real Prometheus scraping it every 1s,
#      evaluating every 1s the SHIPPED rules with every `for:` and `keep_firing_for:`
#      shortened to 5s by deploy/prometheus/shorten-for.sh (no second copy of the rules
#      exists);
#   2. checks that every rule group loaded without error and the target is up;
#   3. sends protocol-v1 datagrams (send_events.py): key "hot:e2e" at exactly 30% of
#      3000 events/s over 700 background keys; asserts hotkey_key_share_ratio{key="hot:e2e"}
#      is within 0.30 +- 0.02, that HotkeydHotKey fires for that key and that
#      HotkeydHotKeyCritical does not (the shard is projected at about 30% of capacity);
#   4. runs check_dashboard_metrics.py against the live /metrics (dashboard and rules use
#      only exported names) with a PromQL syntax check of every expression;
#   5. stops the hot key (background continues) and asserts the alert resolves;
#   6. sends a key that is not valid UTF-8 (b"r \xff\xfe\x80bad") as a hot key and asserts
#      the scrape stays healthy: up == 1, scrape_samples_scraped > 0, no scrape error.
# --prometheus-only (no daemon; tests this script's Prometheus half): Prometheus with the
#   same generated config against a port where nothing listens; asserts the rules load
#   without error, that HotkeydDown fires (the target is down), and that every dashboard
#   and rule expression parses.
#
# HOTKEY_SIM_BIN is accepted for the lead's wiring but not used: the traffic comes from
# send_events.py so the injected share is known exactly.
# Environment: HOTKEYD_EXTRA_ARGS (appended to hotkeyd's flags), E2E_KEEP=1 (keep the
# temporary directory with logs). Everything started is stopped on exit (trap), every wait
# is bounded; a full run takes about a minute.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rules_src="$root/deploy/prometheus/hotkeyd.rules.yml"

mode=full
if [ "${1:-}" = "--prometheus-only" ]; then
  mode=prometheus-only
elif [ "$#" -ge 1 ] && [ -x "$1" ]; then
  hotkeyd_bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
else
  echo "usage: $0 HOTKEYD_BIN [HOTKEY_SIM_BIN] | $0 --prometheus-only" >&2
  exit 2
fi

# ---------------------------------------------------------------- tools
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
for t in curl python3 prometheus; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

# ---------------------------------------------------------------- scaffolding
source "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
e2e_init e2e

hport=$(free_port tcp)
uport=$(free_port udp)
pport=$(free_port tcp)
while [ "$pport" = "$hport" ]; do pport=$(free_port tcp); done
prom="http://127.0.0.1:$pport"
hk="http://127.0.0.1:$hport"


# ---------------------------------------------------------------- Prometheus API helpers
# query EXPR: prints the value of the first sample of an instant query ("" if none).
query() {
  curl -sfG --max-time 5 "$prom/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys
d=json.load(sys.stdin); r=d["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
# query_cmp EXPR OP NUMBER: succeeds when the first sample compares true (python operator).
query_cmp() {
  local v
  v=$(query "$1") || return 1
  [ -n "$v" ] && python3 -c "import sys; sys.exit(0 if float('$v') $2 float('$3') else 1)"
}
# alert_state NAME KEY: prints the state (pending/firing) of alert NAME for key KEY, or "".
alert_state() {
  curl -sf --max-time 5 "$prom/api/v1/alerts" |
    python3 -c 'import json,sys
name,key=sys.argv[1],sys.argv[2]
for a in json.load(sys.stdin)["data"]["alerts"]:
    l=a["labels"]
    if l.get("alertname")==name and (key=="" or l.get("key")==key):
        print(a["state"]); break' "$1" "$2"
}
alert_is() { [ "$(alert_state "$1" "$2")" = "$3" ]; }
# alert_names_fix NAME KEY: the firing alert's description names the fix the daemon advises
# now (hotkey_key_advice_info's strategy for KEY, as Prometheus has it).
alert_names_fix() {
  local fix
  fix=$(curl -sf --max-time 5 "$prom/api/v1/query" \
          --data-urlencode "query=hotkey_key_advice_info{key=\"$2\"} == 1" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["metric"]["strategy"] if r else "")')
  [ -n "$fix" ] || return 1
  curl -sf --max-time 5 "$prom/api/v1/alerts" |
    python3 -c 'import json,sys
name,key,fix=sys.argv[1:4]
for a in json.load(sys.stdin)["data"]["alerts"]:
    l=a["labels"]
    if l.get("alertname")==name and l.get("key")==key and a["state"]=="firing":
        d=a["annotations"]["description"]
        print(d)
        sys.exit(0 if d.endswith("Advised strategy: "+fix+".") else 1)
sys.exit(1)' "$1" "$2" "$fix"
}
alert_gone() { [ -z "$(alert_state "$1" "$2")" ]; }
# rules_ok N: all three groups loaded, N rules, none with an evaluation error.
rules_ok() {
  curl -sf --max-time 5 "$prom/api/v1/rules" |
    python3 -c 'import json,sys
want=int(sys.argv[1]); groups=json.load(sys.stdin)["data"]["groups"]
rules=[r for g in groups for r in g["rules"]]
bad=[(r["name"], r.get("lastError")) for r in rules if r.get("health")=="err" or r.get("lastError")]
names=sorted(g["name"] for g in groups)
print("groups", names, "rules", len(rules), "errors", bad)
sys.exit(0 if len(rules)==want and not bad and names==["hotkeyd.alerts","hotkeyd.cluster","hotkeyd.recording"] else 1)' "$1"
}
# target_healthy: the hotkeyd target is up and its last scrape had no error.
target_healthy() {
  curl -sf --max-time 5 "$prom/api/v1/targets" |
    python3 -c 'import json,sys
t=[t for t in json.load(sys.stdin)["data"]["activeTargets"] if t["labels"].get("job")=="hotkeyd"]
ok=len(t)==1 and t[0]["health"]=="up" and not t[0]["lastError"]
print(t[0]["health"] if t else "no target", t[0]["lastError"] if t else "")
sys.exit(0 if ok else 1)'
}

# ---------------------------------------------------------------- generated config
# The shipped rules, every `for:` and `keep_firing_for:` shortened to 5s (deploy/README.md,
# "Shortening for:").
"$root/deploy/prometheus/shorten-for.sh" "$rules_src" 5s > "$tmp/hotkeyd.rules.yml"
nrules=$(grep -cE '^[[:space:]]*- (alert|record):' "$rules_src")
cat > "$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $tmp/hotkeyd.rules.yml
scrape_configs:
  - job_name: hotkeyd
    static_configs:
      - targets: ['127.0.0.1:$hport']
        labels: {cluster: e2e, shard: '0'}
EOF
promtool check config "$tmp/prometheus.yml" >/dev/null

# ---------------------------------------------------------------- start
if [ "$mode" = full ]; then
  printf 'alert:\n  min_dwell: 0s\n  share_threshold: 0.1\n' > "$tmp/rules.yml"
  # shellcheck disable=SC2086  # HOTKEYD_EXTRA_ARGS is a list of flags
  e2e_start_hotkeyd "$hotkeyd_bin" "$hk" \
    --web.listen-address="127.0.0.1:$hport" \
    --udp.listen-address="127.0.0.1:$uport" \
    --config.file="$tmp/rules.yml" \
    --track.half-life=1s \
    --cluster.capacity=10000 \
    ${HOTKEYD_EXTRA_ARGS:-}
fi

prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$pport" > "$tmp/prometheus.log" 2>&1 &
pids+=($!)
log "prometheus pid ${pids[-1]}: http 127.0.0.1:$pport"
wait_for 20 "prometheus /-/ready" curl -sf --max-time 2 "$prom/-/ready"
wait_for 10 "all $nrules rules loaded without error" rules_ok "$nrules"

if [ "$mode" = prometheus-only ]; then
  # Nothing listens on $hport: the target is down, and HotkeydDown must fire after 5s.
  wait_for 10 "up{job=\"hotkeyd\"} == 0" query_cmp 'up{job="hotkeyd"}' == 0
  wait_for 20 "HotkeydDown firing" alert_is HotkeydDown "" firing
  python3 "$here/check_dashboard_metrics.py" "$root/deploy/grafana/hotkeyd-dashboard.json" \
    "$rules_src" "$here/testdata/metrics.txt" --prometheus "$prom"
  wait_for 5 "rules still evaluate without error" rules_ok "$nrules"
  log "PASS (Prometheus half only)"
  exit 0
fi

# ---------------------------------------------------------------- hot key
send() {  # send ARGS...: starts a sender in the background, sets $sender
  python3 "$here/send_events.py" --port "$uport" --rate 3000 "$@" >> "$tmp/sender.log" 2>&1 &
  sender=$!
  pids+=("$sender")
}
stop_sender() { kill "$sender" 2>/dev/null || true; wait "$sender" 2>/dev/null || true; }
# wait_scrapes N: waits until Prometheus has scraped hotkeyd N more times (1 s apart).
scrapes='count_over_time(up{job="hotkeyd"}[1h])'
wait_scrapes() {
  local from
  from=$(query "$scrapes")
  wait_for $(($1 * 2 + 10)) "$1 more scrapes" query_cmp "$scrapes" '>=' "$((${from:-0} + $1))"
}

wait_for 10 "target up" query_cmp 'up{job="hotkeyd"}' == 1
send --hot-share 0.3 --bad-datagrams-per-second 1
share='hotkey_key_share_ratio{job="hotkeyd",key="hot:e2e"}'
wait_for 20 "$share exported" query_cmp "$share" '>' 0
# Two readings a few scrapes apart, both in 0.30 +- 0.02.
wait_for 15 "$share within 0.30 +- 0.02" query_cmp "abs($share - 0.30)" '<=' 0.02
wait_scrapes 3
v=$(query "$share")
python3 -c "import sys; sys.exit(0 if abs(float('$v') - 0.30) <= 0.02 else 1)" ||
  fail "$share drifted to $v (want 0.30 +- 0.02)"
log "ok: share of hot:e2e = $v"
wait_for 40 "HotkeydHotKey firing for hot:e2e" alert_is HotkeydHotKey hot:e2e firing
wait_for 5 "hotkey_key_hot{key=\"hot:e2e\"} == 1" query_cmp 'max(hotkey_key_hot{key="hot:e2e"})' == 1
wait_for 30 "the alert's text names the fix hotkey_key_advice_info gives" alert_names_fix HotkeydHotKey hot:e2e
# The page's join of the projected load with hot works on the daemon's real series: 3000
# ops/s on --cluster.capacity=10000 (UDP only: without it the headroom is unknown and no key
# is advised) is about 30%, under the 80% page level, so
# HotkeydHotKeyCritical stays silent although the key is hot. The page averages over 2m,
# so the first seconds' samples (a share read from the sender's first few datagrams can be
# 0.5 or more) weigh on it until later ones dilute them: the wait is long enough for that.
page_load='max without (strategy) (avg_over_time(hotkey_key_projected_load_ratio{job="hotkeyd",key="hot:e2e",strategy="none"}[2m])) and hotkey_key_hot{key="hot:e2e"} == 1'
wait_for 60 "projected load with no fix joined with hot, about 0.3" query_cmp "abs(($page_load) - 0.3)" '<' 0.1
alert_gone HotkeydHotKeyCritical hot:e2e || fail "HotkeydHotKeyCritical fired for a shard at 30% of capacity"
log "ok: HotkeydHotKeyCritical not firing"
wait_for 5 "recording rule sees it cluster-wide" query_cmp 'cluster_key:hotkey_key_hot:max{cluster="e2e",key="hot:e2e"}' == 1
wait_for 10 "events counted" query_cmp 'rate(hotkey_events_received_total{job="hotkeyd"}[10s])' '>' 1000
wait_for 10 "rejections counted" query_cmp 'sum(hotkey_events_rejected_total{job="hotkeyd"})' '>' 0

# While a key is hot, every family the dashboard and the rules use should be in /metrics.
curl -sf --max-time 5 "$hk/metrics" > "$tmp/metrics.txt"
# This hotkeyd asks no shard and is in no Redis Cluster: the families that need one (the
# shard's own figures, the cluster node, slot advice and move plans, and, with keys without
# hash tags, the tags) are checked against the sample exposition only (promtool_test.sh).
shard_or_cluster='hotkey_(shard_.*|cluster_.*|slot_.*|tag_.*|hot_slots|hot_tags)'
python3 "$here/check_dashboard_metrics.py" "$root/deploy/grafana/hotkeyd-dashboard.json" \
  "$rules_src" "$tmp/metrics.txt" --absent-ok "$shard_or_cluster" --prometheus "$prom" || fail "dashboard/rules use names the daemon does not export"

# ---------------------------------------------------------------- cool down
stop_sender
send --hot-share 0
wait_for 40 "HotkeydHotKey resolved for hot:e2e" alert_gone HotkeydHotKey hot:e2e
stop_sender

# ---------------------------------------------------------------- invalid UTF-8 key
send --hot-share 0.3 --hot-key-hex "$(printf '\xff\xfe\x80bad' | od -An -tx1 | tr -d ' \n')"
wait_scrapes 5  # several scrapes while the key is the top key
wait_for 10 "target healthy with a non-UTF-8 key" target_healthy
wait_for 5 "up == 1" query_cmp 'up{job="hotkeyd"}' == 1
wait_for 5 "scrape_samples_scraped > 0" query_cmp 'scrape_samples_scraped{job="hotkeyd"}' '>' 0
curl -sf --max-time 5 "$hk/metrics" > "$tmp/metrics-utf8.txt"
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$tmp/metrics-utf8.txt" ||
  fail "/metrics is not valid UTF-8"
log "info: exported key labels now: $(grep -o 'hotkey_key_share_ratio{[^}]*}' "$tmp/metrics-utf8.txt" | head -n 3 | tr '\n' ' ')"
stop_sender
wait_for 5 "rules still evaluate without error" rules_ok "$nrules"

log "PASS"
