#!/usr/bin/env bash
# peers.sh: measures, on this machine, what hotkeyd's peers cost and find, for the README's
# comparison table. Run on demand (never by ctest); prints one JSON object per line.
#   bench/peers.sh [HOTKEYD_BIN (default build/daemon/hotkeyd)]
#   env: KEYS (1000000) OPS (2000000) ZIPF (1.0) TOP (16) REPEATS (3) BENCH_N (200000)
#        DISTINCT (100000) SECTIONS ("1 2 3": which of the parts below to run)
#
# 1. redis-cli --hotkeys: a real redis-server (maxmemory-policy allkeys-lfu, which
#    --hotkeys needs) holding KEYS keys (DEBUG POPULATE) is sent OPS GETs drawn from a Zipf
#    law (redis-cli --pipe). Then `redis-cli --hotkeys` runs REPEATS times: its wall time
#    (median) and how many of the true top TOP keys it lists, with its LFU counters. The same
#    stream goes to hotkeyd over UDP (no decay: --track.half-life=1h), and hotkeyd's top TOP
#    is compared with the same truth.
# 2. The cost to Redis: redis-benchmark (-c 50, GET and SET, -r KEYS, BENCH_N requests each)
#    alone, with one `redis-cli monitor > /dev/null` attached, and with `redis-cli --hotkeys`
#    running in a loop; REPEATS rounds, the three conditions in each round (in alternating
#    order); the ratio to the round's own baseline of the throughput (both ops) and of
#    redis-server's CPU time per request (utime + stime from /proc), median over the rounds.
# 3. statsd_exporter fed one counter per key with a key label (DogStatsD tag), DISTINCT
#    distinct keys: its series count and RSS, installed from Debian's
#    prometheus-statsd-exporter if the release has it (Debian 12 has not: then it says so);
#    and hotkeyd's series count and RSS for the same DISTINCT keys over UDP.
# hotkeyd's own cost to Redis through the tap is measured by bench/tap_cost.sh.
# Needs redis-server and redis-tools (tools/install-test-deps.sh). Two cores are shared here: the
# ratios are taken within one round so that drift between rounds cancels.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/daemon/hotkeyd}
KEYS=${KEYS:-1000000}
OPS=${OPS:-2000000}
ZIPF=${ZIPF:-1.0}
TOP=${TOP:-16}
REPEATS=${REPEATS:-3}
BENCH_N=${BENCH_N:-200000}
DISTINCT=${DISTINCT:-100000}
SECTIONS=${SECTIONS:-1 2 3}
here=bench
tmp=$(mktemp -d /tmp/hotkeyd-peers.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

port() {
  python3 -c 'import socket,sys
s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1]=="udp" else socket.SOCK_STREAM)
s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}
now() { date +%s.%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

cpu=$(LC_ALL=C lscpu | awk -F': *' '/^Model name/ {n=$2} /^CPU family/ {f=$2} /^Model:/ {m=$2}
  /^Hypervisor vendor/ {h=$2} END {printf "%s (family %s, model %s%s)", n, f, m, h ? "; " h " guest" : ""}')
machine_line() {
  printf '{"machine":{"cpu":"%s","cores":%d,"load_average":"%s","redis":"%s","date":"%s"}}\n' \
    "$cpu" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')" "$(date -u +%FT%TZ)"
}
machine_line

# ---- 1. redis-cli --hotkeys against the truth, and hotkeyd on the same stream
rport=$(port tcp)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --maxmemory 2gb \
  --maxmemory-policy allkeys-lfu --enable-debug-command yes --logfile "$tmp/redis.log" &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
rc() { redis-cli -p "$rport" "$@"; }
rc debug populate "$KEYS" key 16 >/dev/null
if [[ " $SECTIONS " == *" 1 "* ]]; then
  python3 "$here/peers.py" zipf "$KEYS" "$OPS" "$ZIPF" 1 "$tmp/stream.resp" "$tmp/truth.json"
  t0=$(now)
  redis-cli -p "$rport" --pipe <"$tmp/stream.resp" >"$tmp/pipe.log"
  t1=$(now)
  printf '{"workload":{"keys":%d,"gets":%d,"zipf":%s,"pipe_seconds":%.2f,"command":"redis-cli --pipe"}}\n' \
    "$KEYS" "$OPS" "$ZIPF" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')"

  times=()
  for _ in $(seq "$REPEATS"); do
    t0=$(now)
    rc --hotkeys >"$tmp/hotkeys.out" 2>&1
    t1=$(now)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')")
  done
  found=$(python3 "$here/peers.py" hotkeys-compare "$tmp/truth.json" "$tmp/hotkeys.out" "$TOP")
  printf '{"redis_cli_hotkeys":{"seconds_median":%s,"seconds":[%s],"keyspace":%d,"found":%s,"command":"redis-cli --hotkeys"}}\n' \
    "$(printf '%s\n' "${times[@]}" | median)" "$(IFS=,; echo "${times[*]}")" \
    "$(rc dbsize)" "$found"

  hweb=$(port tcp)
  hudp=$(port udp)
  printf 'export:\n  top_k: %s\n  min_share: 0.0001\n  min_key_ops: 0\n' "$TOP" >"$tmp/rules.yml"
  # As root, root is kept: the unprivileged user hotkeyd would switch to cannot read $tmp.
  "$bin" --web.listen-address="127.0.0.1:$hweb" --udp.listen-address="127.0.0.1:$hudp" \
    --track.half-life=1h --config.file="$tmp/rules.yml" --run-as=root \
    >"$tmp/hotkeyd.log" 2>&1 &
  hk=$!
  pids+=("$hk")
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$hweb/-/ready" >/dev/null && break; sleep 0.1; done
  sent=$(python3 "$here/peers.py" send-udp "$tmp/stream.resp.keys" 127.0.0.1 "$hudp")
  sleep 2
  curl -sf "http://127.0.0.1:$hweb/api/v1/top" >"$tmp/top.json"
  found=$(python3 "$here/peers.py" hotkeyd-compare "$tmp/truth.json" "$tmp/top.json" "$TOP")
  counted=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(json.dumps({"events":t["events_received"],"kernel_drops":t["kernel_drops"]}))' "$tmp/top.json")
  printf '{"hotkeyd_same_stream":{"sent":%s,"counted":%s,"found":%s,"command":"%s --track.half-life=1h; GET /api/v1/top"}}\n' \
    "$sent" "$counted" "$found" "hotkeyd"
  kill "$hk"
  wait "$hk" 2>/dev/null || true
fi

# ---- 2. the cost to Redis of MONITOR and of --hotkeys, as ratios within each round
rpid=$(rc info server | awk -F: '/^process_id/ {print $2+0}')
cpu_ticks() { awk '{print $14 + $15}' "/proc/$rpid/stat"; }
# One redis-benchmark run: prints SET/s, GET/s, requests/s over both, and redis-server's
# CPU microseconds per request.
bench() {
  local c0 c1 t0 t1 out
  c0=$(cpu_ticks)
  t0=$(now)
  out=$(redis-benchmark -p "$rport" -c 50 -n "$BENCH_N" -t get,set -r "$KEYS" -q 2>/dev/null | tr '\r' '\n')
  t1=$(now)
  c1=$(cpu_ticks)
  awk -v out="$out" -v n="$BENCH_N" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" \
    -v hz="$(getconf CLK_TCK)" 'BEGIN {
      k = split(out, lines, "\n")
      for (i = 1; i <= k; i++) if (lines[i] ~ /requests per second/) {
        split(lines[i], f, " "); sub(":", "", f[1]); r[f[1]] = f[2]
      }
      printf "%s %s %.1f %.2f\n", r["SET"], r["GET"], 2 * n / (t1 - t0), (c1 - c0) / hz * 1e6 / (2 * n)
    }'
}
# condition NAME: runs one benchmark under NAME (alone, monitor, hotkeys_loop).
condition() {
  local helper=
  case $1 in
    monitor) redis-cli -p "$rport" monitor >/dev/null & helper=$! ;;
    hotkeys_loop) (while :; do redis-cli -p "$rport" --hotkeys >/dev/null 2>&1; done) & helper=$! ;;
  esac
  [ -z "$helper" ] || sleep 0.5
  bench
  if [ -n "$helper" ]; then kill "$helper"; wait "$helper" 2>/dev/null || true; fi
}
if [[ " $SECTIONS " == *" 2 "* ]]; then
  declare -A res
  tput_mon=() tput_hk=() cpu_mon=() cpu_hk=()
  for round in $(seq "$REPEATS"); do
    # Alternate the order (ABC, CBA, ...) so a drift in the machine's load cancels.
    order=(alone monitor hotkeys_loop)
    ((round % 2)) || order=(hotkeys_loop monitor alone)
    for c in "${order[@]}"; do res[$c]=$(condition "$c"); done
    read -r a_set a_get a_all a_cpu <<<"${res[alone]}"
    read -r m_set m_get m_all m_cpu <<<"${res[monitor]}"
    read -r h_set h_get h_all h_cpu <<<"${res[hotkeys_loop]}"
    tput_mon+=("$(ratio "$m_all" "$a_all")")
    tput_hk+=("$(ratio "$h_all" "$a_all")")
    cpu_mon+=("$(ratio "$m_cpu" "$a_cpu")")
    cpu_hk+=("$(ratio "$h_cpu" "$a_cpu")")
    printf '{"round":%d,"alone":{"set":%s,"get":%s,"both":%s,"server_cpu_us_per_request":%s},"monitor":{"set":%s,"get":%s,"both":%s,"server_cpu_us_per_request":%s},"hotkeys_loop":{"set":%s,"get":%s,"both":%s,"server_cpu_us_per_request":%s}}\n' \
      "$round" "$a_set" "$a_get" "$a_all" "$a_cpu" "$m_set" "$m_get" "$m_all" "$m_cpu" \
      "$h_set" "$h_get" "$h_all" "$h_cpu"
  done
  m() { printf '%s\n' "$@" | median; }
  printf '{"cost_to_redis":{"throughput_ratio":{"monitor":%s,"hotkeys_loop":%s},"server_cpu_per_request_ratio":{"monitor":%s,"hotkeys_loop":%s},"rounds":%d,"throughput_ratios":{"monitor":[%s],"hotkeys_loop":[%s]},"command":"redis-benchmark -c 50 -n %d -t get,set -r %d -q; alone, with redis-cli monitor >/dev/null, with redis-cli --hotkeys in a loop"}}\n' \
    "$(m "${tput_mon[@]}")" "$(m "${tput_hk[@]}")" "$(m "${cpu_mon[@]}")" "$(m "${cpu_hk[@]}")" \
    "$REPEATS" "$(IFS=,; echo "${tput_mon[*]}")" "$(IFS=,; echo "${tput_hk[*]}")" "$BENCH_N" "$KEYS"
fi

# ---- 3. one counter per key with a key label: statsd_exporter, and hotkeyd
[[ " $SECTIONS " == *" 3 "* ]] || exit 0
if apt-cache policy prometheus-statsd-exporter 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  # Not reached on Debian 12, which does not package it: this branch is untested here.
  dpkg-query -W -f='${Status}' prometheus-statsd-exporter 2>/dev/null | grep -q "ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      prometheus-statsd-exporter >/dev/null
  sweb=$(port tcp)
  sudp=$(port udp)
  prometheus-statsd-exporter --web.listen-address="127.0.0.1:$sweb" \
    --statsd.listen-udp="127.0.0.1:$sudp" --statsd.listen-tcp="" >"$tmp/statsd.log" 2>&1 &
  se=$!
  pids+=("$se")
  sleep 1
  before=$(rss_kb "$se")
  python3 "$here/peers.py" statsd-send "$DISTINCT" 127.0.0.1 "$sudp"
  sleep 2
  series=$(curl -sf "http://127.0.0.1:$sweb/metrics" | grep -c '^hotkey_ops{' || true)
  printf '{"statsd_exporter":{"distinct_keys":%d,"key_series":%d,"rss_kb_before":%d,"rss_kb_after":%d}}\n' \
    "$DISTINCT" "$series" "$before" "$(rss_kb "$se")"
  kill "$se"
else
  printf '{"statsd_exporter":{"unavailable":"no prometheus-statsd-exporter package in this Debian release (apt-cache policy: no candidate)"}}\n'
fi

hweb=$(port tcp)
hudp=$(port udp)
"$bin" --web.listen-address="127.0.0.1:$hweb" --udp.listen-address="127.0.0.1:$hudp" \
  >"$tmp/hotkeyd2.log" 2>&1 &
hk=$!
pids+=("$hk")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$hweb/-/ready" >/dev/null && break; sleep 0.1; done
before=$(rss_kb "$hk")
sent=$(python3 "$here/peers.py" send-distinct "$DISTINCT" 127.0.0.1 "$hudp")
sleep 1
curl -sf "http://127.0.0.1:$hweb/metrics" >"$tmp/metrics.txt"
key_series=$(grep -c '^hotkey_[a-z_]*{[^}]*key=' "$tmp/metrics.txt" || true)
all_series=$(grep -vc '^#' "$tmp/metrics.txt" || true)
printf '{"hotkeyd_distinct":{"distinct_keys":%d,"sent":%s,"key_series":%d,"all_series":%d,"rss_kb_before":%d,"rss_kb_after":%d,"command":"hotkeyd (defaults); GET /metrics; VmRSS"}}\n' \
  "$DISTINCT" "$sent" "$key_series" "$all_series" "$before" "$(rss_kb "$hk")"
machine_line
