#!/usr/bin/env bash
# The hardening stage of CI, run after tools/test.sh (which builds the Release tree in
# BUILD_DIR and runs every test there). Each configuration is compiled once:
#   package   the Debian package from the Release tree tools/test.sh built (BUILD_DIR): the
#             tree is reconfigured for the /usr prefix, which recompiles nothing, then cpack,
#             dpkg -i, systemd-analyze verify on the installed unit, the installed hotkeyd run
#             as the hotkeyd user and scraped, dpkg --purge (tests/deploy/package_test.sh;
#             needs root)
#   sanitize  one clang++ tree with AddressSanitizer, UndefinedBehaviorSanitizer and
#             LeakSanitizer, every assert on, and the libFuzzer targets (-DHOTKEY_SANITIZE=ON
#             -DHOTKEY_FUZZ=ON):                                          -> build-sanitize/
#               the tests of our C++ (every Catch2 binary, the fuzz regressions and the e2e
#               suites that drive the real daemon), then each fuzz target for
#               FUZZ_SECONDS from its seed corpus, JOBS targets at a time; a crash, leak,
#               sanitizer report or broken check fails the stage and leaves the input in
#               build-sanitize/artifacts/<target>/
#   tsan      the threaded tests with ThreadSanitizer (g++), JOBS binaries at a time:
#             daemon_test (receivers, the HTTP server and the aggregator end to end on
#             loopback), http_test, source_test and tap_test (the capture thread; live on lo
#             as root)                                                    -> build-tsan/
# Prints one line per step with its duration; exits non-zero on the first failure.
#
#   STEPS         which steps, default "package sanitize-build sanitize-test tsan-build
#                 tsan-test" (each tree's build apart from its tests, so that .ci/run can
#                 compile the trees while tools/test.sh's tests run)
#   BUILD_DIR     the Release tree of tools/test.sh, default build
#   FUZZ_SECONDS  seconds per fuzz target, default 45
#   JOBS          build parallelism, default 2
# A failing fuzz input belongs in fuzz/regressions/<target>/ once fixed, where
# tests/fuzz/fuzz_regression_test replays it in every build.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${STEPS:-package sanitize-build sanitize-test tsan-build tsan-test}
build=${BUILD_DIR:-build}
fuzz_seconds=${FUZZ_SECONDS:-45}
jobs=${JOBS:-2}
script_start=$(date +%s)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# step NAME COMMAND...: runs COMMAND with its output in a log; prints the duration, and
# the log's tail on failure (and exits).
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

# in_turns PREFIX FUNCTION ITEM...: `step PREFIX-ITEM FUNCTION ITEM` for each item, JOBS at a
# time (each is one process that mostly runs on one core: a fuzz target, a TSan binary);
# fails once all have finished if any failed.
in_turns() {
  local prefix=$1 fn=$2
  shift 2
  local running=() failed=0 item
  for item in "$@"; do
    step "$prefix-$item" "$fn" "$item" &
    running+=($!)
    if ((${#running[@]} >= jobs)); then
      wait "${running[0]}" || failed=1
      running=("${running[@]:1}")
    fi
  done
  for item in "${running[@]}"; do wait "$item" || failed=1; done
  return "$failed"
}

configure() {  # configure BUILD_DIR ARGS...
  local dir=$1
  shift
  local generator=()
  [[ -f $dir/CMakeCache.txt ]] || generator=(-G Ninja)  # an existing tree keeps its own
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOTKEY_BUILD_BENCH=OFF \
    -DHOTKEY_WERROR=ON "${launcher[@]}" "$@"
}

# The sanitized tests: every test of our C++, with ASan's LeakSanitizer on (it needs ptrace
# of the process by itself, allowed in the CI container). HOTKEY_SANITIZER tells tests that
# measure memory (RSS) that shadow memory and quarantine make such figures meaningless.
# Left out, because they run none of our C++ or only repeat under the sanitizers what the
# Release run already timed: the rules, the mixin, the Kubernetes manifests, the Alertmanager
# configs, the docs, the page's linters, the Python kit, the Prometheus end-to-end run, the
# page in Chromium,
# `hotkeyd top` in tmux, the attacks that time scrapes to 1 s (TLS churn, first logins
# during a flood; their queue and sessions run sanitized in http_test), the steady advice
# beside a Redis under a CPU quota (its load is timed, and at nice 19 beside the Release
# tests its shard gets less than its quota; the prober and the advice run sanitized in
# fake_shard_e2e and tap_redis_e2e), the prober's load against a loaded Redis's own clock
# (shard_load_test: timed to 5%, and a Redis under 0.2 CPUs that must saturate; at nice 19
# the prober's thread and the Redis wait for a core; the rest of shard_test runs
# sanitized), and the cluster lab (label long; it skips under a sanitizer).
not_our_code='^(deploy_.*|docs_.*|web_page_(npm_ci|lint)|clients_python_test|e2e_(playground|history_page|demo_steady)|top_tmux_e2e|tap_advice_steady_e2e|shard_load_test|http_attack_(tls_churn|first_login_other|first_login_same))$'
run_sanitized_tests() {
  HOTKEY_SANITIZER=address \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -E "$not_our_code" -LE long
}

fuzz_targets=(fuzz_protocol fuzz_rules_file fuzz_deserialize fuzz_http fuzz_resp fuzz_memcached
  fuzz_reassembly fuzz_tap fuzz_shard fuzz_cluster)
run_fuzz() {  # run_fuzz TARGET
  local t=$1
  local work=build-sanitize/corpus-work/$t artifacts=build-sanitize/artifacts/$t
  # Start from the committed seeds each time (a fresh, writable copy: the repo stays
  # untouched); -rss_limit_mb bounds any input to 2 GiB.
  rm -rf "$work" && mkdir -p "$work" "$artifacts"
  cp fuzz/corpus/"$t"/* "$work"/
  local dict=()
  [[ -f fuzz/$t.dict ]] && dict=(-dict=fuzz/"$t".dict)
  build-sanitize/fuzz/"$t" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts"/ "${dict[@]}" "$work"
}

# TSan: Abseil, yaml-cpp and prometheus-cpp are not instrumented, but every lock and atomic
# crossing threads in our code is std::, which TSan sees.
tsan_tests=(daemon_test http_test source_test tap_test)
run_tsan() {  # run_tsan TEST: runs build-tsan/tests/daemon/<layer>/<lib>/TEST
  local bin
  bin=$(find build-tsan/tests -type f -name "$1" -perm -u+x | head -n 1)
  [[ -n $bin ]] || { echo "no $1 in build-tsan/tests" >&2; return 1; }
  HOTKEY_SANITIZER=thread TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$bin"
}

for s in $steps; do
  case $s in
    package)
      step package env JOBS="$jobs" tests/deploy/package_test.sh "$build"
      ;;
    sanitize-build)
      step sanitize-configure configure build-sanitize -DCMAKE_CXX_COMPILER=clang++ \
        -DHOTKEY_SANITIZE=ON -DHOTKEY_FUZZ=ON
      step sanitize-build cmake --build build-sanitize -j"$jobs"
      ;;
    sanitize-test)
      step sanitize-ctest run_sanitized_tests
      in_turns fuzz-run run_fuzz "${fuzz_targets[@]}"
      ;;
    tsan-build)
      step tsan-configure configure build-tsan -DHOTKEY_TSAN=ON
      step tsan-build cmake --build build-tsan -j"$jobs" --target "${tsan_tests[@]}"
      ;;
    tsan-test)
      in_turns tsan run_tsan "${tsan_tests[@]}"
      ;;
    *)
      echo "unknown step $s (package, sanitize-build, sanitize-test, tsan-build, tsan-test)" >&2
      exit 2
      ;;
  esac
done
printf 'ok   %-28s %4ds\n' "ci-hardening total" "$(($(date +%s) - script_start))"
