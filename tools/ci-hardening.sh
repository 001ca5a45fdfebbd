#!/usr/bin/env bash
# The hardening stage of CI, run after the normal tests (tools/test.sh):
#   asan  every CTest test built with AddressSanitizer + UBSan (g++, -DHOTKEY_SANITIZE=ON),
#         LeakSanitizer on                                               -> build-asan/
#   tsan  daemon_test (receiver threads, the HTTP server and the aggregator, end to end on
#         loopback sockets), http_test, source_test and tap_test (the capture thread; live on
#         lo as root) built with ThreadSanitizer (g++, -DHOTKEY_TSAN=ON)                     -> build-tsan/
#   release  the tree as packagers build it: CMAKE_BUILD_TYPE=Release (-O3) with
#         -march=native and -Werror, the unit tests in that build, and cmake --install
#         into a throwaway prefix                                         -> build-release/
#   package  the Debian package: a Release build with the /usr prefix, cpack, then
#         dpkg -i, systemd-analyze verify on the installed unit, the installed hotkeyd run
#         as the hotkeyd user and scraped, dpkg --purge (tests/deploy/package_test.sh;
#         needs root)                                                     -> build-package/
#   fuzz  the libFuzzer targets of fuzz/ (clang++, -DHOTKEY_FUZZ=ON), each run for
#         FUZZ_SECONDS from its seed corpus; any crash, leak, sanitizer report or broken
#         check fails the stage and leaves the input in build-fuzz/artifacts/<target>/ -> build-fuzz/
# Prints one line per step with its duration; exits non-zero on the first failure.
#
#   STEPS         which stages, default "release package asan tsan fuzz"
#   FUZZ_SECONDS  seconds per fuzz target, default 45
#   JOBS          build parallelism, default 2
#
# Measured on the project's 2-core machine, from empty build directories: see the end of
# this file. A failing fuzz input belongs in fuzz/regressions/<target>/ once fixed, where
# tests/fuzz/fuzz_regression_test replays it in every build.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${STEPS:-release package asan tsan fuzz}
fuzz_seconds=${FUZZ_SECONDS:-45}
jobs=${JOBS:-2}
script_start=$(date +%s)

# step NAME COMMAND...: runs COMMAND with its output in a log; prints the duration, and
# the log's tail on failure.
step() {
  local name=$1
  shift
  local log start rc
  log=$(mktemp "/tmp/ci-hardening.${name//[^a-z0-9-]/_}.XXXXXX")
  start=$(date +%s)
  set +e
  "$@" >"$log" 2>&1
  rc=$?
  set -e
  local took=$(($(date +%s) - start))
  if [[ $rc -ne 0 ]]; then
    printf 'FAIL %-28s %4ds  (exit %d, log %s)\n' "$name" "$took" "$rc" "$log"
    tail -n 60 "$log"
    exit 1
  fi
  printf 'ok   %-28s %4ds\n' "$name" "$took"
  rm -f "$log"
}

configure() {  # configure BUILD_DIR ARGS...
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOTKEY_BUILD_BENCH=OFF \
    -DHOTKEY_WERROR=ON "$@"
}

# The unit tests of a Release build (asserts off, -O3 -march=native: what a package runs),
# then the install rules. The end-to-end tests run in the RelWithDebInfo and ASan builds.
release_tests=(version_test sketch_test model_test parsers_test config_test log_test http_test
  source_test aggregate_test web_test daemon_test tools_test)
run_release_tests() {
  local names
  names=$(IFS='|' && echo "${release_tests[*]}")
  ctest --test-dir build-release --output-on-failure -j"$jobs" -R "^(${names}|install_layout)\$"
}

# ASan + UBSan over the whole suite. detect_leaks=1 works here (LeakSanitizer needs ptrace
# of the process by itself; it is allowed in the CI container). The deploy tests start a
# real Prometheus against the sanitized daemon: slower, still well inside their timeouts.
# HOTKEY_SANITIZER tells tests that measure memory (RSS) that ASan's shadow memory and
# quarantine make such figures meaningless here.
# Left out: the tests that run none of our C++ (the rules, the mixin, the Kubernetes
# manifests, the Alertmanager configs, the docs' links, the Python kit); tools/test.sh runs them.
not_our_code='^(deploy_(promtool|alertmanager|alertmanager_notify|mixin_generated|kubernetes_npm_ci|kubernetes_schemas)|docs_links|clients_python_test)$'
run_asan() {
  HOTKEY_SANITIZER=address \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "$not_our_code"
}

# TSan: the daemon's threads (receivers, the HTTP server and the aggregator end to end),
# the HTTP server's own, and the sources' report hand-off. Abseil, yaml-cpp and
# prometheus-cpp are not instrumented, but every lock and atomic crossing threads in our
# code is std::, which TSan sees.
run_tsan() {  # run_tsan LIBRARY: runs build-tsan/tests/daemon/<layer>/LIBRARY/LIBRARY_test
  HOTKEY_SANITIZER=thread TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    build-tsan/tests/daemon/*/"$1"/"$1"_test
}

fuzz_targets=(fuzz_protocol fuzz_rules_file fuzz_deserialize fuzz_http fuzz_resp fuzz_memcached fuzz_reassembly
  fuzz_tap fuzz_shard fuzz_cluster)

run_fuzz() {  # run_fuzz TARGET
  local t=$1
  local work=build-fuzz/corpus-work/$t artifacts=build-fuzz/artifacts/$t
  # Start from the committed seeds each time (a fresh, writable copy: the repo stays
  # untouched); -rss_limit_mb bounds any input to 2 GiB.
  rm -rf "$work" && mkdir -p "$work" "$artifacts"
  cp fuzz/corpus/"$t"/* "$work"/
  local dict=()
  [[ -f fuzz/$t.dict ]] && dict=(-dict=fuzz/"$t".dict)
  build-fuzz/fuzz/"$t" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts"/ "${dict[@]}" "$work"
}

for s in $steps; do
  case $s in
    release)
      # The product and its tests, as packagers build them. The benchmarks are left out:
      # tools/test.sh has built them already (-O2, -Werror), and here they only cost CI time.
      step release-configure cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS=-march=native -DHOTKEY_WERROR=ON -DHOTKEY_BUILD_BENCH=OFF
      # Only what the release tests run and install: the end-to-end tests run in the
      # RelWithDebInfo and ASan builds.
      step release-build cmake --build build-release -j"$jobs" --target hotkeyd hotkey-sim \
        "${release_tests[@]}"
      step release-tests run_release_tests
      ;;
    package)
      step package env JOBS="$jobs" tests/deploy/package_test.sh build-package
      ;;
    asan)
      step asan-configure configure build-asan -DHOTKEY_SANITIZE=ON
      step asan-build cmake --build build-asan -j"$jobs"
      step asan-ctest run_asan
      ;;
    tsan)
      step tsan-configure configure build-tsan -DHOTKEY_TSAN=ON
      step tsan-build cmake --build build-tsan -j"$jobs" --target daemon_test http_test \
        source_test tap_test
      # The tap's capture thread and its report hand-off (the live test captures as root).
      for lib in daemon http source tap; do
        step "tsan-${lib}_test" run_tsan "$lib"
      done
      ;;
    fuzz)
      step fuzz-configure configure build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DHOTKEY_FUZZ=ON \
        -DBUILD_TESTING=OFF
      step fuzz-build cmake --build build-fuzz -j"$jobs" --target "${fuzz_targets[@]}"
      for t in "${fuzz_targets[@]}"; do
        step "fuzz-run-$t" run_fuzz "$t"
      done
      ;;
    *)
      echo "unknown step $s (release, package, asan, tsan, fuzz)" >&2
      exit 2
      ;;
  esac
done
printf 'ok   %-28s %4ds\n' "ci-hardening total" "$(($(date +%s) - script_start))"

# Measured 2026-12-01 on the 2-core machine, empty build directories, with other builds
# beside it at times: release 291 s build + 7 s tests; package 116 s; asan 461 s build (at
# -O1 -g1; 1112 s at -O2 -g the run before) + 166 s ctest (the tap's real-server tests
# included; the cluster lab skips under a sanitizer); tsan 167 s build + 21 s daemon_test +
# 2 s tap_test; fuzz 246 s build + 8 x 31 s runs (FUZZ_SECONDS=30, as .ci/run then set;
# it sets 20 since 2026-12-02).
# tools/test.sh before it took 652 s; the whole .ci/run comes to about 40 minutes here.
# package (measured 2026-12-01, same machine): 146 s from an empty build-package without
# ccache (the Release build of hotkeyd and hotkey-sim is nearly all of it; install, run and
# purge take about 5 s), 12 s with a warm ccache.
