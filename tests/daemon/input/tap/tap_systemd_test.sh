#!/bin/bash
# The tap's systemd drop-in (deploy/systemd/hotkeyd-tap.conf) on top of the unit, and the
# template unit of one hotkeyd per instance (deploy/systemd/hotkeyd@.service): each must
# load, grant exactly CAP_NET_RAW and AF_PACKET, and keep the unit's exposure score
# (systemd-analyze security --offline) at 2.5 or under ("OK").
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

# The template, as instance 6380: its flags from /etc/default/hotkeyd-6380.
t=$(mktemp -d)
trap 'rm -rf "$d" "$t"' EXIT
cp "$src/deploy/systemd/hotkeyd@.service" "$t/"
out=$(SYSTEMD_UNIT_PATH="$t:" systemd-analyze security --offline=true hotkeyd@6380.service 2>&1)
echo "$out" | grep -E "AF_PACKET|CapabilityBoundingSet|Overall"
echo "$out" | grep -q "✗ RestrictAddressFamilies=~AF_PACKET" ||
  { echo "FAIL: the template does not allow AF_PACKET"; exit 1; }
tscore=$(echo "$out" | sed -n 's/.*Overall exposure level for hotkeyd@6380.service: \([0-9.]*\).*/\1/p')
[ -n "$tscore" ] || { echo "FAIL: no exposure score for the template: $out"; exit 1; }
awk -v s="$tscore" 'BEGIN { exit !(s <= 2.5) }' || { echo "FAIL: template exposure $tscore > 2.5"; exit 1; }
unit="$src/deploy/systemd/hotkeyd@.service"
grep -qx 'CapabilityBoundingSet=CAP_NET_RAW' "$unit"
grep -qx 'AmbientCapabilities=CAP_NET_RAW' "$unit"
grep -qx 'EnvironmentFile=/etc/default/hotkeyd-%i' "$unit"
grep -qx 'StateDirectory=hotkeyd/%i' "$unit"
echo "PASS: exposure $score, template exposure $tscore"
