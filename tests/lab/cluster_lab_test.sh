#!/usr/bin/env bash
# cluster_lab_test.sh: the short version of the cluster lab (tools/cluster-lab/lab.py
# --quick --check) against a Redis Cluster of 8 redis-server primaries, each in a cgroup
# whose CPU quota makes it saturate at the lab's capacity (calibrated at start), 8 tapping
# hotkeyds given no --cluster.capacity/shards/app-servers (each measures them) and a real
# Prometheus, all on loopback. Passes when, for each of the three mixes (hot key at 30%
# of the cluster's ops with 5%, 95% and 50% writes):
#   - every hotkeyd reports its capacity, shards (8) and app servers (1) as measured;
#   - with no fix the burnt shard saturates (busy >= 90% of its quota);
#   - the burnt shard's hotkeyd marks the key hot with the shard-local share (+-0.02), the
#     write ratio (+-0.03) and the advice of the model with its measured inputs at the
#     rate the driver achieved; the other shards mark nothing hot; the shipped recording
#     rule cluster_key:hotkey_key_ops_per_cluster_ops:ratio gives the key's share of the
#     whole cluster (+-0.02);
#   - under each fix, the busiest and least busy shard's load measured by INFO
#     commandstats is within 10% (relative) of the model's projection with the burnt
#     shard's hotkeyd's measured inputs at the rate the driver achieved;
#   - the advised fix resolves HotkeydHotKeyCritical; caching the write-heavy key keeps it
#     firing, with the key's own shard the busiest;
#   - the burnt shard's landing page, fed the shards' measured loads by the lab
#     (--model.measured-loads-file), shows for every fix of the mix its measured busiest and
#     least busy load within 10% of its projection, the projection within 10% of the
#     model's, and nothing stale (from /api/v1/measured, the figures the page draws; after
#     the last mix also as headless Chromium draws the page, checked equal, when chromium
#     is installed).
# With --loop (CTest cluster_lab_loop_test), lab.py --loop: the fixes are not switched by the
# lab but pushed by the hotkeyds' feeds and applied by the Python kit (clients/python) in the
# app workers; see lab.py's run_loop.
# Usage: cluster_lab_test.sh HOTKEYD_BIN [--loop]. Exits 77 (skipped) without root (the tap needs
# CAP_NET_RAW, the quotas a cgroup), under a sanitizer build (HOTKEY_SANITIZER set),
# without redis-server, redis-cli, prometheus, promtool or Debian's python3-redis, or when
# the load driver kept under 90% of its rate with no shard saturated (a loaded machine).
# Takes about 100 s; every wait in the lab is bounded and it stops everything it started.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
hotkeyd=${1:?usage: $0 HOTKEYD_BIN}
if [ -n "${HOTKEY_SANITIZER:-}" ]; then
  # The lab paces its load in real time and reads the alerts' timing: a sanitized build's
  # slowdown on two cores would test the machine, not the model.
  echo "SKIP: not under a sanitizer (HOTKEY_SANITIZER=$HOTKEY_SANITIZER)" >&2
  exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the tap needs CAP_NET_RAW and the shards' quotas a cgroup (run as root)" >&2
  exit 77
fi
for t in redis-server redis-cli prometheus promtool; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed" >&2; exit 77; }
done
/usr/bin/python3 -c 'import redis' 2>/dev/null || { echo "SKIP: python3-redis missing" >&2; exit 77; }
shift
exec /usr/bin/python3 "$root/tools/cluster-lab/lab.py" --hotkeyd "$hotkeyd" --quick --check "$@"
