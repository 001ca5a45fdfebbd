#!/bin/bash
# tap_cost.sh: what the tap costs the Redis it watches, measured in one run on this host.
# For redis-benchmark (50 clients, GET and SET, random keys over 100,000, -P 1 and -P 16),
# in each of R rounds (the order of the conditions rotating from round to round): Redis
# with nothing attached, with hotkeyd tapping its port on lo, and with one MONITOR client
# attached (what redis-faina and profilers use); with BASELINE=<another hotkeyd>, also
# that binary's tap. Two costs for each, relative to the same round's "off":
#   throughput  1 - requests/s ÷ requests/s off (on two shared cores this mixes in the
#               CPU the tap takes from redis-benchmark)
#   Redis CPU   Redis's own CPU per command (/proc/<pid>/task/*/schedstat, user and kernel: the
#               packet copies the kernel makes for a capture are charged to the sender)
#               ÷ the same off, - 1
# each as the median [min, max] over the rounds, and the tap's CPU per 100k commands/s.
# Then the peer, redis-cli --hotkeys (needs maxmemory-policy allkeys-lfu), on the same
# keyspace with one hot key added: what it finds, how long it takes, and Redis's GET rate
# while it runs, beside hotkeyd's top.
# PIN=1 gives Redis a core of its own (taskset: redis-server on CPU 0; redis-benchmark, the
# tap and the MONITOR client on the others), as on a shard host where the sidecar does not
# share Redis's core; then Redis CPU per command is the cost that falls on Redis itself.
#   bench/tap_cost.sh <hotkeyd> [requests per run, default 1000000] [rounds, default 5]
# Needs root (the tap), redis-server, redis-benchmark, redis-cli, curl.
set -euo pipefail
hotkeyd=$1
n=${2:-1000000}
rounds=${3:-5}
baseline=${BASELINE:-}
on_redis=() on_rest=()
if [[ ${PIN:-0} == 1 ]]; then
  on_redis=(taskset -c 0)
  on_rest=(taskset -c "1-$(($(nproc) - 1))")
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${on_redis[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
  >"$work/redis.log" 2>&1 &
redis_pid=$!
pids+=("$redis_pid")
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END{printf "%.0f\n", s}'; }  # all threads

# bench <pipeline> -> "requests/s redis_cpu_ns_per_command" (GET and SET together)
bench() {
  local c0 c1 s0 s1
  c0=$(cpu_ns "$redis_pid"); s0=$(date +%s.%N)
  "${on_rest[@]}" redis-benchmark -p "$port" -c 50 -n "$n" -r 100000 -t get,set -P "$1" --csv 2>/dev/null |
    tr -d '"' | awk -F, '$1=="GET"{g=$2} $1=="SET"{s=$2} END{print g, s}' >"$work/rps"
  c1=$(cpu_ns "$redis_pid"); s1=$(date +%s.%N)
  read -r g s <"$work/rps"
  # Throughput: the two runs' harmonic combination (n commands each).
  awk -v g="$g" -v s="$s" -v c0="$c0" -v c1="$c1" -v n="$n" \
    'BEGIN{printf "%.1f %.2f\n", 2 / (1 / g + 1 / s), (c1 - c0) / (2 * n + 2)}'
}
start_tap() {  # start_tap BINARY
  "${on_rest[@]}" "$1" --tap.interface=lo --tap.port="$port" --web.listen-address=127.0.0.1:0 \
    --udp.listen-address=127.0.0.1:0 --log.level=info 2>"$work/hotkeyd.log" &
  tap_pid=$!
  for _ in $(seq 50); do grep -q 'kind=tap' "$work/hotkeyd.log" && break; sleep 0.1; done
  web=$(sed -n 's/.*web=\([^ ]*\).*/\1/p' "$work/hotkeyd.log" | head -1)
}
stop_tap() { kill "$tap_pid"; wait "$tap_pid" || true; }
metric_sum() { curl -s "http://$web/metrics" | awk -v m="$1" '$1 ~ "^"m {s+=$2} END{print s+0}'; }

# measure <condition> <pipeline> -> appends "condition rps cpu_per_cmd [tap_cpu_ns wall_s
# counted drops]" to $work/rows
measure() {
  local cond=$1 p=$2
  case $cond in
    off) echo "off $(bench "$p")" >>"$work/rows" ;;
    tap | baseline)
      local bin=$hotkeyd
      [[ $cond == baseline ]] && bin=$baseline
      start_tap "$bin"
      local t0 t1 s0 s1 r
      t0=$(cpu_ns "$tap_pid"); s0=$(date +%s.%N)
      r=$(bench "$p")
      t1=$(cpu_ns "$tap_pid"); s1=$(date +%s.%N)
      sleep 0.5
      echo "$cond $r $((t1 - t0)) $(awk -v a="$s0" -v b="$s1" 'BEGIN{print b - a}')" \
        "$(metric_sum hotkey_tap_commands_total) $(metric_sum hotkey_tap_capture_drops_total)" \
        >>"$work/rows"
      stop_tap
      ;;
    monitor)
      "${on_rest[@]}" redis-cli -p "$port" monitor >/dev/null &
      local mon=$!
      sleep 0.3
      echo "monitor $(bench "$p")" >>"$work/rows"
      kill "$mon"; wait "$mon" 2>/dev/null || true
      ;;
  esac
}

conds=(off tap monitor)
[[ -n $baseline ]] && conds+=(baseline)
echo "redis-server $(redis-server --version | awk '{print $3}'), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "redis-benchmark -c 50 -n $n -r 100000 -t get,set -P <p>; $rounds rounds, conditions rotated${on_redis:+; Redis pinned to CPU 0, the rest to the other CPUs}"
echo "costs relative to the same round's off: median [min, max]"
for p in 1 16; do
  : >"$work/rows"
  for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < ${#conds[@]}; i++)); do
      # off first in each round, then the others rotated.
      if ((i == 0)); then measure off "$p"; continue; fi
      k=$(( (i - 1 + r) % (${#conds[@]} - 1) + 1 ))
      measure "${conds[$k]}" "$p"
    done
  done
  python3 - "$work/rows" "$p" "$n" <<'PY'
import statistics, sys
rows, p, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rounds, cur = [], None
for line in open(rows):
    f = line.split()
    if f[0] == "off":
        cur = {}
        rounds.append(cur)
    cur[f[0]] = [float(x) for x in f[1:]]
def stat(xs):
    return "%5.1f%% [%5.1f, %5.1f]" % (100 * statistics.median(xs), 100 * min(xs), 100 * max(xs))
conds = [c for c in ("tap", "baseline", "monitor") if c in rounds[0]]
print("-P %d" % p)
thr, cpu = {}, {}
for c in conds:
    thr[c] = [1 - r[c][0] / r["off"][0] for r in rounds]
    cpu[c] = [r[c][1] / r["off"][1] - 1 for r in rounds]
    print("  %-8s throughput cost %s   Redis CPU per command %s" % (c, stat(thr[c]), stat(cpu[c])))
print("  Redis CPU per command off: %.0f ns (median)" % statistics.median(r["off"][1] for r in rounds))
for c in conds:
    if c == "monitor":
        continue
    print("  %s/MONITOR: throughput %s, Redis CPU %s (median of the per-round ratios)" % (
        c, "%.2f" % statistics.median(a / b for a, b in zip(thr[c], thr["monitor"])),
        "%.2f" % statistics.median(a / b for a, b in zip(cpu[c], cpu["monitor"]))))
    per = [r[c][2] / 1e9 / r[c][3] / (2 * n / r[c][3] / 1e5) for r in rounds]
    counted = [int(r[c][4]) for r in rounds]
    drops = [int(r[c][5]) for r in rounds]
    print("  %s CPU per 100k commands/s: %s of a core; counted %s of %d commands a round; drops %s" % (
        c, stat(per).strip(), "/".join(map(str, counted)), 2 * n + 2, "/".join(map(str, drops))))
PY
done

echo
echo "redis-cli --hotkeys (maxmemory-policy allkeys-lfu) beside the tap; 40 clients GET random keys"
echo "over 100,000, 10 clients GET one hot key (redis-benchmark without -r: \"key:__rand_int__\")"
redis-cli -p "$port" config set maxmemory-policy allkeys-lfu >/dev/null
# The hot key exists (--hotkeys scans the keyspace: a key only ever missed is not in it).
redis-cli -p "$port" set key:__rand_int__ hot >/dev/null
start_tap "$hotkeyd"
bg_rate() {  # GET requests/s of the random-key clients over one run
  redis-benchmark -p "$port" -c 40 -n "$n" -r 100000 -t get --csv 2>/dev/null |
    tr -d '"' | awk -F, '$1=="GET"{print $2}'
}
redis-benchmark -p "$port" -c 10 -n $((n * 100)) -t get -q >/dev/null 2>&1 &
hot=$!
sleep 1
alone=$(bg_rate)
( while :; do redis-cli -p "$port" --hotkeys >/dev/null 2>&1; done ) &
loop=$!
with=$(bg_rate)
kill "$loop"; wait "$loop" 2>/dev/null || true
h0=$(date +%s.%N)
redis-cli -p "$port" --hotkeys >"$work/hotkeys.txt" 2>&1
h1=$(date +%s.%N)
echo "  random-key GETs/s: $alone alone, $with while --hotkeys runs back to back ($(awk -v a="$alone" -v b="$with" 'BEGIN{printf "%.1f", 100 * (1 - b / a)}')% cost)"
echo "  one --hotkeys run took $(awk -v s="$h0" -v e="$h1" 'BEGIN{printf "%.1f", e-s}') s; its summary:"
sed -n '/summary/,$p' "$work/hotkeys.txt" | grep -E 'Sampled|hot key' | sort -t: -k2 -n -r | head -4 | sed 's/^/    /'
echo "  hotkeyd's top keys (/api/v1/top) at the same time:"
curl -s "http://$web/api/v1/top" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in d.get("keys", [])[:3]:
    print("    %s share %.3f ops/s %s" % (k.get("key"), k.get("share", 0), k.get("ops_per_second")))'
kill "$hot" 2>/dev/null || true
stop_tap
