#!/bin/bash
# hotkeyd with --tap.file (no privilege): its /metrics, tap families included, pass
# `promtool check metrics`, and the counts of the recorded capture are exported.
#   tap_metrics_test.sh <hotkeyd> <testdata dir>
set -u
hotkeyd=$1
pcap=$2/redis_mix.pcap
command -v promtool >/dev/null || { echo "SKIP: no promtool"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
# The server port: the destination of the capture's first frame (record.sh's probe SYN).
port=$(od -An -tu1 -j $((24 + 16 + 14 + 20 + 2)) -N2 "$pcap" | awk '{print $1 * 256 + $2}')
"$hotkeyd" --tap.file="$pcap" --tap.port="$port" --web.listen-address=127.0.0.1:0 \
  --udp.listen-address=127.0.0.1:0 2>"$work/log" &
pid=$!
web=
for _ in $(seq 100); do
  web=$(sed -n 's/.*web=\([^ ]*\).*/\1/p' "$work/log" | head -1)
  [ -n "$web" ] && curl -s "http://$web/metrics" | grep '^hotkey_tap_capture_file_done 1' >/dev/null && break
  sleep 0.1
done
curl -s "http://$web/metrics" >"$work/metrics" || fail "no /metrics"
promtool check metrics <"$work/metrics" || fail "promtool check metrics"
grep -qx 'hotkey_tap_commands_total{protocol="redis"} 82' "$work/metrics" || fail "commands"
grep -qx 'hotkey_tap_keys_total{protocol="redis",access="read"} 50' "$work/metrics" || fail "reads"
grep -qx 'hotkey_tap_keys_total{protocol="redis",access="write"} 41' "$work/metrics" || fail "writes"
curl -s "http://$web/api/v1/top" | grep '"kind":"tap"' >/dev/null || fail "/api/v1/top has no tap source"
echo PASS
