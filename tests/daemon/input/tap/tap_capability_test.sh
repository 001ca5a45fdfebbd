#!/bin/bash
# hotkeyd without CAP_NET_RAW: a live tap must refuse to start, at once, with exit code 1
# and a message that says how to grant the capability; the same flags with --tap.file
# (no capture) need no privilege. --check-config opens the capture as a start does: it fails
# without CAP_NET_RAW and on a missing interface, with a start's message and exit code 1,
# and passes on lo as root with a real redis-server on the tapped port (the shard it asks). Runs hotkeyd as the unprivileged user nobody, so it needs root
# to switch users (CI runs as root); otherwise it skips (exit 77).
#   tap_capability_test.sh <hotkeyd>
set -u
hotkeyd=$1
testdata=$(cd "$(dirname "$0")" && pwd)/testdata
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root to run hotkeyd as nobody (setpriv)"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
# nobody may not reach the build tree: run a copy.
cp "$hotkeyd" "$work/hotkeyd"
chmod 755 "$work/hotkeyd"
# A command prefix, not a function: "$!" of a backgrounded function is its subshell's, and
# killing that would leave hotkeyd running.
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --)

"${as_nobody[@]}" "$work/hotkeyd" --tap.interface=lo --tap.port=6379 \
  --web.listen-address=127.0.0.1:0 --udp.listen-address=127.0.0.1:0 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill "$pid"
  fail "hotkeyd kept running without CAP_NET_RAW"
fi
wait "$pid"
rc=$?
cat "$work/err"
[ "$rc" = 1 ] || fail "exit code $rc, want 1"
want='hotkeyd: --tap.interface=lo: capturing needs CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep /usr/bin/hotkeyd`, or AmbientCapabilities=CAP_NET_RAW in the unit: see deploy/systemd/hotkeyd-tap.conf)'
grep -qxF -- "$want" "$work/err" || fail "stderr does not say how to grant CAP_NET_RAW"

# --check-config says what the start said, on stdout without the "hotkeyd: " prefix, exit 1.
rc=0
"${as_nobody[@]}" "$work/hotkeyd" --check-config --tap.interface=lo --tap.port=6379 \
  >"$work/check" 2>&1 || rc=$?
cat "$work/check"
[ "$rc" = 1 ] || fail "--check-config without CAP_NET_RAW exited $rc, want 1"
grep -qxF -- "${want#hotkeyd: }" "$work/check" ||
  fail "--check-config without CAP_NET_RAW does not give the start's message"
grep -q "flags: ok" "$work/check" || fail "--check-config: the flags themselves are fine"

# As root: a missing interface fails the check as it fails a start; lo passes.
rc=0
"$work/hotkeyd" --tap.interface=nosuch0 --tap.port=6379 --web.listen-address=127.0.0.1:0 \
  --udp.listen-address=127.0.0.1:0 >/dev/null 2>"$work/start-nosuch" || rc=$?
[ "$rc" = 1 ] || fail "a start on nosuch0 exited $rc, want 1"
start_msg=$(head -1 "$work/start-nosuch")
case "$start_msg" in
  *"--tap.interface=nosuch0: no such interface"*) ;;
  *) fail "a start on nosuch0 said: $start_msg" ;;
esac
rc=0
"$work/hotkeyd" --check-config --tap.interface=nosuch0 --tap.port=6379 >"$work/check" 2>&1 || rc=$?
cat "$work/check"
[ "$rc" = 1 ] || fail "--check-config on nosuch0 exited $rc, want 1"
grep -qxF -- "${start_msg#hotkeyd: }" "$work/check" ||
  fail "--check-config on nosuch0 does not give the start's message"
# On lo as root the capture opens; the shard the tap's port names is asked too: a real
# redis-server there passes, nothing there fails (as a start would log).
rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  >"$work/redis.log" 2>&1 &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
rc=0
"$work/hotkeyd" --check-config --tap.interface=lo --tap.port="$rport" >"$work/check" 2>&1 || rc=$?
cat "$work/check"
[ "$rc" = 0 ] || fail "--check-config on lo as root exited $rc, want 0"
grep -qF "tap capture --tap.interface=lo: ok" "$work/check" || fail "--check-config on lo: no ok line"
grep -qxF "shard 127.0.0.1:$rport: ok (answers)" "$work/check" || fail "--check-config: no shard line"
kill "$redis_pid"
wait "$redis_pid" 2>/dev/null
rc=0
"$work/hotkeyd" --check-config --tap.interface=lo --tap.port="$rport" >"$work/check" 2>&1 || rc=$?
cat "$work/check"
[ "$rc" = 1 ] || fail "--check-config with no server on the tapped port exited $rc, want 1"
grep -q "^shard 127.0.0.1:$rport: connect to 127.0.0.1:$rport: " "$work/check" ||
  fail "--check-config: no shard error"
# A bytes-weighted tap beside UDP is refused by the check as by a start.
rc=0
"$work/hotkeyd" --check-config --tap.interface=lo --tap.port=6379 --tap.weight=bytes \
  --udp.listen-address=127.0.0.1:10111 >"$work/check" 2>&1 || rc=$?
cat "$work/check"
[ "$rc" = 1 ] || fail "--check-config with bytes and UDP exited $rc, want 1"
grep -qF "Run two hotkeyds" "$work/check" || fail "--check-config with bytes and UDP: no advice"
rc=0
"$work/hotkeyd" --check-config --tap.interface=lo --tap.port=6379 --tap.weight=bytes \
  --shard.address="$work/no-shard.sock" >"$work/check" 2>&1 || rc=$?
cat "$work/check"
[ "$rc" = 1 ] || fail "--check-config with a bytes tap alone (and no shard) exited $rc, want 1"
grep -qxF "flags: ok" "$work/check" || fail "--check-config: a bytes tap alone is refused"
grep -qxF "unit: bytes; udp: off" "$work/check" || fail "--check-config: no unit line"

# A capture file needs no privilege: hotkeyd starts and serves.
cp "$testdata/redis_mix.pcap" "$work/"
chmod 644 "$work/redis_mix.pcap"
"${as_nobody[@]}" "$work/hotkeyd" --tap.file="$work/redis_mix.pcap" --tap.port=1 \
  --web.listen-address=127.0.0.1:0 --udp.listen-address=127.0.0.1:0 >"$work/out2" 2>"$work/err2" &
pid=$!
started=
for _ in $(seq 100); do
  grep -q 'kind=tap' "$work/err2" && started=1 && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill "$pid" 2>/dev/null
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -9 "$pid" 2>/dev/null
wait "$pid"
[ -n "$started" ] || { cat "$work/err2"; fail "hotkeyd --tap.file did not start as nobody"; }
echo "PASS"
