#!/bin/bash
# The tap's systemd drop-in (deploy/systemd/hotkeyd-tap.conf) on top of the unit: it must
# load (systemd-analyze verify), grant exactly CAP_NET_RAW and AF_PACKET, and keep the
# unit's exposure score (systemd-analyze security --offline) at 2.5 or under ("OK").
#   tap_systemd_test.sh <source dir>
set -eu
src=$1
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/hotkeyd.service.d"
cp "$src/deploy/systemd/hotkeyd.service" "$d/"
cp "$src/deploy/systemd/hotkeyd-tap.conf" "$d/hotkeyd.service.d/tap.conf"
out=$(SYSTEMD_UNIT_PATH="$d:" systemd-analyze security --offline=true hotkeyd.service 2>&1)
echo "$out" | grep -E "AF_PACKET|CapabilityBoundingSet|Overall"
echo "$out" | grep -q "✗ RestrictAddressFamilies=~AF_PACKET" || { echo "FAIL: AF_PACKET not allowed"; exit 1; }
score=$(echo "$out" | sed -n 's/.*Overall exposure level for hotkeyd.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || { echo "FAIL: no exposure score"; exit 1; }
awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }' || { echo "FAIL: exposure $score > 2.5"; exit 1; }
grep -qx 'CapabilityBoundingSet=CAP_NET_RAW' "$src/deploy/systemd/hotkeyd-tap.conf"
grep -qx 'AmbientCapabilities=CAP_NET_RAW' "$src/deploy/systemd/hotkeyd-tap.conf"
echo "PASS: exposure $score"
