#!/usr/bin/env bash
# Installs the dependencies (tools/install-test-deps.sh: the build's and the tests'), builds
# everything as a package is built (Release: -O3, asserts compiled out) and runs every test
# (the README's test command; .ci/run runs it first, then the hardening stage, whose
# sanitized build runs the tests again with every assert on). Exits non-zero on any failure.
#   BUILD_DIR (default build)   where to build
#   JOBS (default 2)            build and test parallelism
#   CMAKE_ARGS                  extra configure flags
#   WHILE_TESTING               a command run at the lowest CPU priority (nice 19) while the
#                               tests run (CI compiles and runs its sanitized trees there:
#                               the tests mostly wait on sockets, timers and CPU quotas); its
#                               output goes to WHILE_TESTING.log in the build directory, and
#                               a failure fails this script. The tests labelled `long` (real
#                               shards under CPU quotas, one at a time) run after the others;
#                               at nice 19 the command takes only the CPU they leave.
# ccache, when installed (tools/install-test-deps.sh installs it), keeps what a later run
# compiles again. Each stage prints its duration.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
took() { echo "test.sh: $1 took $(($(date +%s) - start)) s"; start=$(date +%s); }
tools/install-test-deps.sh
took "install"
build=${BUILD_DIR:-build}
jobs=${JOBS:-2}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Ninja for a new tree; an existing one keeps the generator it was made with.
generator=()
[[ -f $build/CMakeCache.txt ]] || generator=(-G Ninja)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DHOTKEY_WERROR=ON \
  "${launcher[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$jobs"
took "build"
if [[ -z ${WHILE_TESTING:-} ]]; then
  ctest --test-dir "$build" --output-on-failure -j"$jobs"
  took "tests"
  exit 0
fi
log=$build/WHILE_TESTING.log
nice -n 19 bash -c "$WHILE_TESTING" >"$log" 2>&1 &
background=$!
rc=0
ctest --test-dir "$build" --output-on-failure -j"$jobs" -LE long || rc=$?
took "tests (not long)"
ctest --test-dir "$build" --output-on-failure -j"$jobs" -L long || rc=$?
took "tests (long)"
background_rc=0
wait "$background" || background_rc=$?
took "the rest of WHILE_TESTING"
cat "$log"
if [[ $background_rc -ne 0 ]]; then
  echo "WHILE_TESTING failed (exit $background_rc): $WHILE_TESTING" >&2
  exit "$background_rc"
fi
exit "$rc"
