#!/usr/bin/env bash
# readme-screenshot.sh: regenerates docs/landing-page.png, the README's screenshot of the
# landing page: hotkeyd --demo on free loopback ports, 12 s for the demo's hot keys and their advice
# to show, then one headless Chromium screenshot at 1280x800.
#   tools/readme-screenshot.sh [HOTKEYD_BIN (default build/daemon/hotkeyd)] [OUT.png]
# (relative paths are taken from the repository root).
# Needs chromium (tools/install-test-deps.sh). Fails if the PNG is 200 KB or more: the README's
# first screen should not weigh on every clone.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/daemon/hotkeyd}
out=${2:-docs/landing-page.png}
settle=${SETTLE_SECONDS:-12}  # the advice shows once the 10 s rate window is whole
tmp=$(mktemp -d /tmp/hotkeyd-screenshot.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

port() {
  python3 -c 'import socket,sys
s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1]=="udp" else socket.SOCK_STREAM)
s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}
web=$(port tcp)
udp=$(port udp)
"$bin" --demo --web.listen-address="127.0.0.1:$web" --udp.listen-address="127.0.0.1:$udp" \
  >"$tmp/hotkeyd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -sf --max-time 1 "http://127.0.0.1:$web/-/ready" >/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/hotkeyd.log" >&2; exit 1; }
  sleep 0.1
done
sleep "$settle"
mkdir -p "$(dirname "$out")"
# --virtual-time-budget lets the page's scripts fetch and draw before the shot.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
  --window-size=1280,800 --virtual-time-budget=3000 --screenshot="$tmp/shot.png" \
  "http://127.0.0.1:$web/" >"$tmp/chromium.log" 2>&1 || { cat "$tmp/chromium.log" >&2; exit 1; }
cp "$tmp/shot.png" "$out"
size=$(stat -c %s "$out")
echo "$out: $size bytes"
if [ "$size" -ge 200000 ]; then
  echo "readme-screenshot.sh: $out is $size bytes, over 200 KB" >&2
  exit 1
fi
