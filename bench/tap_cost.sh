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
echo "redis-cli --hotkeys (maxmemory-policy allkeys-lfu) beside the tap, one hot key added:"
redis-cli -p "$port" config set maxmemory-policy allkeys-lfu >/dev/null
start_tap
# Background: GETs of random keys, plus one client hammering "hot:key".
redis-benchmark -p "$port" -c 40 -n $((n * 4)) -r 100000 -t get -q --csv >"$work/bg.csv" 2>/dev/null &
bg=$!
redis-cli -p "$port" -r -1 -i 0.0001 get hot:key >/dev/null 2>&1 &
hot=$!
sleep 3
c0=$(commands); s0=$(date +%s.%N)
sleep 2
c1=$(commands); s1=$(date +%s.%N)
base=$(awk -v a="$c0" -v b="$c1" -v s="$s0" -v e="$s1" 'BEGIN{printf "%.0f", (b-a)/(e-s)}')
h0=$(date +%s.%N)
redis-cli -p "$port" --hotkeys >"$work/hotkeys.txt" 2>&1 &
hk=$!
hc0=$(commands)
wait "$hk"
h1=$(date +%s.%N)
hc1=$(commands)
during=$(awk -v a="$hc0" -v b="$hc1" -v s="$h0" -v e="$h1" 'BEGIN{printf "%.0f", (b-a)/(e-s)}')
echo "  commands/s on Redis (counted by the tap) before: $base; while --hotkeys ran: $during"
echo "  --hotkeys took $(awk -v s="$h0" -v e="$h1" 'BEGIN{printf "%.1f", e-s}') s; it found:"
grep -E "hot key found|counter" "$work/hotkeys.txt" | head -5 | sed 's/^/    /'
echo "  hotkeyd's top keys (/api/v1/top), at once:"
curl -s "http://$web/api/v1/top" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in d.get("keys", [])[:3]:
    print("    %s share %.3f ops/s %s" % (k.get("key"), k.get("share", 0), k.get("ops_per_second")))'
kill "$bg" "$hot" 2>/dev/null || true
stop_tap
