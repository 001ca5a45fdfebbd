#!/bin/bash
# hotkeyd without CAP_NET_RAW: a live tap must refuse to start, at once, with exit code 1
# and a message that says how to grant the capability; the same flags with --tap.file
# (no capture) need no privilege. Runs hotkeyd as the unprivileged user nobody, so it
# needs root to switch users (CI runs as root); otherwise it skips (exit 77).
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
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all -- "$@"; }

as_nobody "$work/hotkeyd" --tap.interface=lo --tap.port=6379 \
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

# A capture file needs no privilege: hotkeyd starts and serves.
cp "$testdata/redis_mix.pcap" "$work/"
chmod 644 "$work/redis_mix.pcap"
as_nobody "$work/hotkeyd" --tap.file="$work/redis_mix.pcap" --tap.port=1 \
  --web.listen-address=127.0.0.1:0 --udp.listen-address=127.0.0.1:0 >"$work/out2" 2>"$work/err2" &
pid=$!
started=
for _ in $(seq 100); do
  grep -q 'kind=tap' "$work/err2" && started=1 && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill "$pid" 2>/dev/null
wait "$pid"
[ -n "$started" ] || { cat "$work/err2"; fail "hotkeyd --tap.file did not start as nobody"; }
echo "PASS"
