#!/bin/bash
# tap_cost.sh: what the tap costs the Redis it watches, measured in one run on this host.
# For redis-benchmark (50 clients, GET and SET, random keys over 100,000, -P 1 and -P 16):
# Redis's requests/s with nothing attached, with hotkeyd tapping its port on lo, and with
# one MONITOR client attached (what redis-faina and profilers use); the tap's CPU (from
# /proc/<pid>/stat utime + stime) per 100k commands/s. Then the peer, redis-cli --hotkeys
# (needs maxmemory-policy allkeys-lfu), on the same keyspace with one hot key added: what
# it finds, how long it takes, and Redis's GET rate while it runs, beside hotkeyd's top.
#   bench/tap_cost.sh <hotkeyd> [requests per run, default 1000000]
# Needs root (the tap), redis-server, redis-benchmark, redis-cli, curl.
set -euo pipefail
hotkeyd=$1
n=${2:-1000000}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
clk=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# bench <pipeline> -> "GET_rps SET_rps"
bench() {
  redis-benchmark -p "$port" -c 50 -n "$n" -r 100000 -t get,set -P "$1" --csv 2>/dev/null |
    tr -d '"' | awk -F, '$1=="GET"{g=$2} $1=="SET"{s=$2} END{print g, s}'
}
start_tap() {
  "$hotkeyd" --tap.interface=lo --tap.port="$port" --web.listen-address=127.0.0.1:0 \
    --udp.listen-address=127.0.0.1:0 --log.level=info 2>"$work/hotkeyd.log" &
  tap_pid=$!
  for _ in $(seq 50); do grep -q 'kind=tap' "$work/hotkeyd.log" && break; sleep 0.1; done
  web=$(sed -n 's/.*web=\([^ ]*\).*/\1/p' "$work/hotkeyd.log" | head -1)
}
stop_tap() { kill "$tap_pid"; wait "$tap_pid" || true; }
drops() { curl -s "http://$web/metrics" | awk '/^hotkey_tap_capture_drops_total/{s+=$2} END{print s+0}'; }
commands() { curl -s "http://$web/metrics" | awk '/^hotkey_tap_commands_total/{s+=$2} END{print s+0}'; }

echo "redis-server $(redis-server --version | awk '{print $3}'), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "redis-benchmark -c 50 -n $n -r 100000 -t get,set -P <p>; requests/s"
for p in 1 16; do
  read -r off_get off_set < <(bench "$p")
  start_tap
  t0=$(cpu_ticks "$tap_pid"); s0=$(date +%s.%N)
  read -r tap_get tap_set < <(bench "$p")
  t1=$(cpu_ticks "$tap_pid"); s1=$(date +%s.%N)
  sleep 0.5
  tap_drops=$(drops); tap_cmds=$(commands)
  stop_tap
  redis-cli -p "$port" monitor >/dev/null &
  mon=$!
  sleep 0.3
  read -r mon_get mon_set < <(bench "$p")
  kill "$mon"; wait "$mon" 2>/dev/null || true
  awk -v p="$p" -v og="$off_get" -v os="$off_set" -v tg="$tap_get" -v ts="$tap_set" \
      -v mg="$mon_get" -v ms="$mon_set" -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" \
      -v clk="$clk" -v d="$tap_drops" -v c="$tap_cmds" -v n="$n" 'BEGIN {
    cpu = (t1 - t0) / clk; wall = s1 - s0; rate = 2 * n / wall;
    printf "-P %-2d off GET %.0f SET %.0f | tap GET %.0f SET %.0f | MONITOR GET %.0f SET %.0f\n", p, og, os, tg, ts, mg, ms;
    tc = 1 - (tg + ts) / (og + os); mc = 1 - (mg + ms) / (og + os);
    printf "      cost to Redis: tap %.1f%%, MONITOR %.1f%%; tap/MONITOR = %.2f\n", 100 * tc, 100 * mc, (mc > 0 ? tc / mc : 0);
    printf "      tap CPU %.2f s over %.2f s at %.0f commands/s = %.1f%% of a core per 100k commands/s; counted %d of %d commands, capture drops %d\n", cpu, wall, rate, 100 * cpu / wall / (rate / 1e5), c, 2 * n + 2, d;
  }'
done

echo
echo "redis-cli --hotkeys (maxmemory-policy allkeys-lfu) beside the tap; 40 clients GET random keys"
echo "over 100,000, 10 clients GET one hot key (redis-benchmark without -r: \"key:__rand_int__\")"
redis-cli -p "$port" config set maxmemory-policy allkeys-lfu >/dev/null
# The hot key exists (--hotkeys scans the keyspace: a key only ever missed is not in it).
redis-cli -p "$port" set key:__rand_int__ hot >/dev/null
start_tap
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
