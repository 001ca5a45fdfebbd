#!/bin/bash
# slots_cost.sh: what counting Redis Cluster slots and hash tags (--track.slots) costs, against
# the same daemon with them off, in the same run.
#   ingest  hotkey-bench-daemon's drain phase (bench/daemon_bench.cc), with one hotkeyd
#           counting slots (--track.slots=true) and, as its baseline, the same binary with
#           --track.slots=false, in every round: events per CPU-second of each, and their
#           ratio within each round (receivers_1_over_baseline_per_cpu_second), as the
#           median, min and max over the rounds. The loadgen's keys have no hash tag; a
#           tagged key also updates the tag tracker.
#   tap     bench/tap_cost.sh with the same two (BASELINE=slots off): the tap's cost to the
#           Redis it watches, slots on against off, in the same rounds.
#   bench/slots_cost.sh <hotkeyd> <hotkey-bench-daemon> [rounds, default 5] [tap requests,
#           default 1000000; 0 skips the tap part]
# Needs root for the tap part, and what bench/tap_cost.sh needs.
set -euo pipefail
hotkeyd=$(readlink -f "$1")
bench=$2
rounds=${3:-5}
requests=${4:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in true false; do
  printf '#!/bin/sh\nexec %q --track.slots=%s "$@"\n' "$hotkeyd" "$mode" >"$work/slots-$mode"
  chmod +x "$work/slots-$mode"
done
echo "== ingest: slots on (receivers_1) against off (baseline_receivers_1), $rounds rounds"
"$bench" --phase drain --repeats "$rounds" --hotkeyd "$work/slots-true" \
  --baseline-hotkeyd "$work/slots-false"
if [[ $requests != 0 ]]; then
  echo "== tap: slots on (hotkeyd) against off (BASELINE), $rounds rounds"
  BASELINE=$work/slots-false "$(dirname "$0")/tap_cost.sh" "$work/slots-true" "$requests" "$rounds"
fi
