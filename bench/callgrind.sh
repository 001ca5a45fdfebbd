#!/usr/bin/env bash
# Instructions per update of the tracker and of the XXH3 hash alone (the floor), counted by
# callgrind over hotkey-bench-sketch's update loops only (--toggle-collect), so the figures
# do not move with the machine's load. Needs valgrind (Debian: apt-get install valgrind).
#
#   bench/callgrind.sh [BENCH] [flags for hotkey-bench-sketch]
#   bench/callgrind.sh build/bench/hotkey-bench-sketch --stream=zipf-1.0 --updates=8000000
#
# BENCH defaults to build/bench/hotkey-bench-sketch, the flags to the second line's. With
# CALLGRIND_OUT=DIR the profiles are kept as DIR/callgrind.<loop>.out, for
# `callgrind_annotate --inclusive=yes` (where the instructions go). Prints one JSON object
# per loop. A few minutes for 8M updates: valgrind runs the whole
# program (the stream's generation too) about 50 times slower than natively.
set -euo pipefail

bench=build/bench/hotkey-bench-sketch
if (($#)) && [[ $1 != -* ]]; then
  bench=$1
  shift
fi
args=("$@")
((${#args[@]})) || args=(--stream=zipf-1.0 --updates=8000000)

command -v valgrind >/dev/null || {
  echo "callgrind.sh: valgrind not found (Debian: apt-get install valgrind)" >&2
  exit 1
}
[[ -x $bench ]] || {
  echo "callgrind.sh: $bench not found: build the hotkey-bench-sketch target" >&2
  exit 1
}

for loop in TrackerUpdateLoop HashOnlyLoop; do
  extra=()
  [[ $loop == HashOnlyLoop ]] && extra=(--hash-only)
  log=$(mktemp)
  profile=/dev/null
  [[ -n ${CALLGRIND_OUT:-} ]] && profile=$CALLGRIND_OUT/callgrind.$loop.out
  out=$(valgrind --tool=callgrind --callgrind-out-file="$profile" \
    --toggle-collect="*hotkey_bench::${loop}*" \
    "$bench" --callgrind "${extra[@]}" "${args[@]}" 2>"$log")
  collected=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$log")
  rm -f "$log"
  updates=$(sed -n 's/.*"updates":\([0-9]*\).*/\1/p' <<<"$out")
  [[ -n $collected && -n $updates ]] || {
    echo "callgrind.sh: no count for $loop" >&2
    exit 1
  }
  awk -v l="$loop" -v c="$collected" -v u="$updates" -v o="$out" 'BEGIN {
    printf "{\"loop\":\"%s\",\"instructions\":%s,\"updates\":%s,\"instructions_per_update\":%.1f,\"run\":%s}\n", l, c, u, c / u, o
  }'
done
