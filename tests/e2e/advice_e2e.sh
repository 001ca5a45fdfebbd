#!/usr/bin/env bash
# advice_e2e.sh: the shard model's advice, end to end: hotkey-sim traffic -> hotkeyd over UDP
# -> /api/v1/top and /metrics, on loopback.
#
# Usage: tests/e2e/advice_e2e.sh HOTKEYD_BIN HOTKEY_SIM_BIN
#
# Three hot keys over a Zipf background, each built so that exactly one fix is right:
#   user:celebrity:profile   95% reads    -> cache
#   post:viral:likes         95% writes   -> split
#   item:flash-sale:stock    50/50        -> split_cache
# The script polls /api/v1/top until all three are hot and the measured shard rate has
# settled and the keys are advised (once the 10 s rate window is whole), asserts the advice
# (four readings, 0.5 s apart), then polls /metrics until hotkey_key_advice_info{key,strategy}
# says the same and
# hotkey_key_projected_load_ratio has a series per strategy for each key, consistent with
# the advice (tests/e2e/advice_check.py holds the assertions).
#
# The arithmetic (daemon/common/model/include/hotkey/model/shard_model.h; the daemon takes B = the
# shard's measured ops/s minus the key's, H = the key's ops/s, w its write share):
# T = 10,000 events/s reach a shard of capacity C = 10,000 ops/s, N = 8 shards, A = 100 app
# servers refreshing every 1 s (A/refresh = 100 ops/s), R = 4 replicas, S = 8 sub-keys,
# target 0.8 C = 8,000 ops/s, order none, cache, replicate, split, split_cache.
#   profile, h = 0.29, w = 0.05: H = 2900, B = 7100, Hw = 145, Hr = 2755
#     none  B + H = 10000 (1.00 C) > 8000
#     cache B + Hw + A/refresh = 7100 + 145 + 100 = 7345 (0.73 C)           -> cache
#   likes, h = 0.32, w = 0.95: H = 3200, B = 6800, Hw = 3040, Hr = 160
#     cache     B + Hw + 100 = 9940 (0.99 C); replicate B + Hr/4 + Hw = 9880 (0.99 C)
#     split     B + Hw/8 + Hr = 6800 + 380 + 160 = 7340 (0.73 C)              -> split
#   stock, h = 0.29, w = 0.5: H = 2900, B = 7100, Hw = Hr = 1450
#     cache     B + Hw + 100 = 8650 (0.87 C); replicate B + Hr/4 + Hw = 8913 (0.89 C)
#     split     B + Hw/8 + Hr = 7100 + 181 + 1450 = 8731 (0.87 C)
#     split_cache B + Hw/8 + A/refresh = 7100 + 181 + 100 = 7381 (0.74 C)   -> split_cache
# Every answer holds while the measured shard rate stays within 9,220..10,860 ops/s (the
# tightest bounds: stock's cache must stay over 0.8 C, likes' split under it): +-8% around
# what is sent, against a decayed-rate noise of a few per cent. These shares (not
# daemon.cc's demo 0.22/0.25/0.25 at 9,500/s, which allows -4%..+6%) were picked for that
# margin. The background (the remaining 10%, Zipf s = 1 over 100,000 keys, 10% writes) is
# part of B, as the other two celebrities are.
#
# Environment: E2E_KEEP=1 keeps the temporary directory with the logs. Everything started
# is stopped on exit (trap); every wait is bounded; a run takes about 5 s.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "$#" -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: $0 HOTKEYD_BIN HOTKEY_SIM_BIN" >&2
  exit 2
fi
hotkeyd_bin=$1
sim_bin=$2
for t in curl python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

# ---------------------------------------------------------------- scaffolding
source "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
e2e_init advice-e2e

hport=$(free_port tcp)
uport=$(free_port udp)
hk="http://127.0.0.1:$hport"

# ---------------------------------------------------------------- hotkeyd
# Cluster flags and alert settings spelled out (not left to defaults) so the arithmetic
# above stays true.
printf 'alert:\n  share_threshold: 0.1\n  min_dwell: 250ms\n' > "$tmp/rules.yml"
e2e_start_hotkeyd "$hotkeyd_bin" "$hk" \
  --web.listen-address="127.0.0.1:$hport" \
  --udp.listen-address="127.0.0.1:$uport" \
  --track.publish-interval=100ms \
  --config.file="$tmp/rules.yml" \
  --cluster.shards=8 \
  --cluster.capacity=10000 \
  --cluster.app-servers=100 \
  --cluster.refresh=1s \
  --cluster.replicas=4 \
  --cluster.split=8 \
  --cluster.target=0.8 \
  --cluster.order=none,cache,replicate,split,split_cache

# ---------------------------------------------------------------- traffic
"$sim_bin" send --to "127.0.0.1:$uport" --rate 10000 --keys 100000 --zipf 1.0 \
  --write-share 0.1 --duration 60s --seed 7 \
  --celebrity user:celebrity:profile:0.29:0.05 \
  --celebrity post:viral:likes:0.32:0.95 \
  --celebrity item:flash-sale:stock:0.29:0.5 \
  > "$tmp/sim.log" 2>&1 &
pids+=($!)
log "hotkey-sim pid ${pids[-1]}: 10000 events/s"

want=(user:celebrity:profile=cache post:viral:likes=split item:flash-sale:stock=split_cache)
check() { python3 "$here/advice_check.py" "$@"; }

# ---------------------------------------------------------------- /api/v1/top
# Hot within a second or two (half-life 500 ms, dwell 250 ms). The measured shard rate (the
# model's input) counts the idle time before the first event, so it climbs for a few
# half-lives; once it is within 3% of what is sent, well inside the +-8% the arithmetic
# allows, the advice must be right at once and stay right.
wait_for 15 "/api/v1/top: all three keys hot" check hot "$hk" "${want[@]}"
wait_for 15 "measured shard rate settled near 10000 ops/s" check settled "$hk" 10000
# A hot key is advised once its episode spans 5 s (--cluster.capacity given: a configured
# headroom), and then held by hysteresis on the projected loads (alert.advice_margin).
wait_for 20 "/api/v1/top: the three keys advised" check advised "$hk" "${want[@]}"
for i in 1 2 3 4; do
  check top "$hk" "${want[@]}" > "$tmp/last-check.out" 2>&1 ||
    { sed 's/^/    /' "$tmp/last-check.out" >&4; fail "wrong advice on reading $i"; }
  [ "$i" -gt 1 ] || { log "ok: /api/v1/top: advice cache, split, split_cache"; sed 's/^/    /' "$tmp/last-check.out" >&3; }
  sleep 0.5  # on purpose: readings a couple of snapshots apart, to see the advice hold
done
log "ok: the advice held for three more readings"

# ---------------------------------------------------------------- /metrics
wait_for 5 "/metrics: hotkey_key_hot and hotkey_key_projected_load_ratio agree" \
  check metrics "$hk" "${want[@]}"

kill -0 "$hotkeyd_pid" 2>/dev/null || fail "hotkeyd died"
log "PASS"
