#!/usr/bin/env bash
# A live /metrics page passes `promtool check metrics` (Prometheus's own linter), also when
# keys hold invalid UTF-8, quotes, backslashes and control bytes.
#   tests/deploy/promtool_check_metrics.sh HOTKEYD_BIN
set -euo pipefail
bin=${1:?usage: $0 HOTKEYD_BIN}
command -v promtool >/dev/null || { echo "promtool missing (apt-get install prometheus)"; exit 1; }
port() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, getattr(socket, sys.argv[1])); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"; }
web=$(port SOCK_STREAM); udp=$(port SOCK_DGRAM)
log=$(mktemp)
"$bin" --web.listen-address=127.0.0.1:$web --udp.listen-address=127.0.0.1:$udp \
  --track.publish-interval=50ms --demo --demo.rate=5000 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$web/-/ready" >/dev/null && break; sleep 0.05; done
python3 - "$udp" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
hostile = [b'\xff\xfe\x80bad', b'say "hi"', b'back\\slash', b'ctl\x01\x7f', b'nul\x00byte', b'\xe2\x82']
for _ in range(400):
    s.sendto(b"\n".join(b"r " + k for k in hostile), ("127.0.0.1", int(sys.argv[1])))
PY
# Polls (10 s at most) until the hostile keys are published.
escaped='hotkey_key_share_ratio{key="\\xff\\xfe\\x80bad"}'
page=
for _ in $(seq 200); do
  page=$(curl -sf "http://127.0.0.1:$web/metrics") && grep -qF "$escaped" <<<"$page" && break
  sleep 0.05
done
echo "$page" | promtool check metrics
grep -qF "$escaped" <<<"$page" || {
  echo "FAIL: the invalid-UTF-8 key is not exported as an escaped label"; echo "$page" | grep share_ratio; exit 1; }
echo "PASS: promtool check metrics on a live page with hostile keys"
