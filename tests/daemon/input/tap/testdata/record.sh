#!/bin/bash
# Records the tap tests' captures (tests/daemon/input/tap/testdata/*.pcap) from real servers on loopback:
# redis-server driven by redis-py and redis-benchmark, memcached driven by pymemcache and a
# raw socket for the meta commands. Needs root (tcpdump on lo), redis-server, memcached,
# python3-redis, python3-pymemcache. The workloads are fixed, so the counts the tests
# expect (tap_test.cc) follow from this script; redis_benchmark.txt keeps the server's own
# INFO commandstats of its run.
#   tests/daemon/input/tap/testdata/record.sh [outdir]
set -euo pipefail
# The Debian packages python3-redis and python3-pymemcache live under /usr/bin/python3.
PY=${PYTHON:-/usr/bin/python3}
out=${1:-$(cd "$(dirname "$0")" && pwd)}
work=$(mktemp -d)
pids=()
cleanup() { [ -n "${tcpdump_pid:-}" ] && kill -INT "$tcpdump_pid" 2>/dev/null; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
capture() {  # capture <file> <port>: starts tcpdump and waits until it sees a probe
  # --immediate-mode: without it the last block of packets (up to 1 s) is lost at SIGINT.
  tcpdump -i lo -U --immediate-mode -B 131072 -s 262144 -l --print -n -w "$1" "tcp port $2" >"$work/tcpdump.out" \
    2>"$work/tcpdump.log" &
  tcpdump_pid=$!
  # "listening" is printed before the capture really starts: probe with a bare connection
  # (a SYN, then FIN; no request) until tcpdump prints it. Tests see it as one empty flow.
  for _ in $(seq 100); do
    "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "$2"
    sleep 0.1
    [ -s "$work/tcpdump.out" ] && break
  done
  [ -s "$work/tcpdump.out" ] || { echo "tcpdump did not start" >&2; exit 1; }
  sleep 0.2
}
stop_capture() {
  sleep 1
  kill -INT "$tcpdump_pid"
  wait "$tcpdump_pid" || true
  tcpdump_pid=
  grep -E "captured|dropped" "$work/tcpdump.log" >&2
}

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done

# redis_mix.pcap: one connection from its SYN, every count known (tap_test.cc).
capture "$out/redis_mix.pcap" "$rport"
"$PY" - "$rport" <<'PY'
import sys, redis
r = redis.Redis(port=int(sys.argv[1]))
for _ in range(30): r.get("hot")
for _ in range(10): r.set("hot", "v" * 100)
for _ in range(5): r.mget("a", "b", "c")
for _ in range(2): r.mset({"x": 1, "y": 2})
for _ in range(3): r.hset("h", "f", "v")
for _ in range(4): r.hget("h", "f")
p = r.pipeline(transaction=False)
for _ in range(20): p.incr("counter")
p.execute()
t = r.pipeline(transaction=True)
t.set("m1", "1"); t.get("m1")
t.execute()
r.smove("src", "dst", "member")
r.getdel("gd")
try:
    r.execute_command("NOSUCHCOMMAND", "arg")
except redis.exceptions.ResponseError:
    pass
r.ping()
r.close()
PY
stop_capture

# redis_bytes.pcap: a 100,000-byte value written once and read twice, and a miss.
capture "$out/redis_bytes.pcap" "$rport"
"$PY" - "$rport" <<'PY'
import sys, redis
r = redis.Redis(port=int(sys.argv[1]))
r.set("big", "x" * 100000)
r.get("big"); r.get("big")
r.get("small")
r.close()
PY
stop_capture

# redis_midstream.pcap: the connection is open (and used) before the capture starts.
"$PY" - "$rport" "$out/redis_midstream.pcap" <<'PY' &
import sys, time, redis, os
r = redis.Redis(port=int(sys.argv[1]))
for _ in range(5): r.get("before")
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2] + ".go"): time.sleep(0.05)
for _ in range(50): r.get("after")
r.close()
PY
client=$!
while [ ! -e "$out/redis_midstream.pcap.ready" ]; do sleep 0.05; done
capture "$out/redis_midstream.pcap" "$rport"
touch "$out/redis_midstream.pcap.go"
wait "$client"
stop_capture
rm -f "$out/redis_midstream.pcap.ready" "$out/redis_midstream.pcap.go"

# redis_benchmark.pcap: redis-benchmark pipelined, random keys; the truth is the server's.
redis-cli -p "$rport" config resetstat >/dev/null
capture "$out/redis_benchmark.pcap" "$rport"
redis-benchmark -p "$rport" -n 2000 -c 4 -P 16 -r 100 -t get,set -q >/dev/null
stop_capture
redis-cli -p "$rport" info commandstats | tr -d '\r' | grep -E '^cmdstat_(get|set):' \
  >"$out/redis_benchmark.txt"

# memcached.pcap: pymemcache's text commands, then the meta commands on a raw socket.
mport=$(free_port)
memcached -p "$mport" -l 127.0.0.1 -U 0 -u nobody >"$work/mc.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
  "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' \
    "$mport" 2>/dev/null && break
  sleep 0.1
done
capture "$out/memcached.pcap" "$mport"
"$PY" - "$mport" <<'PY'
import sys, socket
from pymemcache.client.base import Client
c = Client(("127.0.0.1", int(sys.argv[1])), default_noreply=False)
c.set("a", "1"); c.set("b", "2"); c.set("c", "3")
for _ in range(4): c.get_many(["a", "b", "c"])
c.get("a")
v, cas = c.gets("a")
c.cas("a", "9", cas)
c.add("n", "1"); c.replace("n", "2"); c.append("n", "3"); c.prepend("n", "0")
c.incr("n", 1); c.decr("n", 1)
c.touch("a", 100)
c.delete("b")
c.set("q", "x", noreply=True)
c.close()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"ms m 2\r\nhi\r\nmg m v\r\nma cnt N0 J1\r\nmd m\r\nmn\r\n")
buf = b""
while not buf.endswith(b"MN\r\n"): buf += s.recv(4096)
s.close()
PY
stop_capture
ls -l "$out"/*.pcap
