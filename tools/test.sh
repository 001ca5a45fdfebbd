#!/usr/bin/env bash
# Installs the dependencies (tools/install-test-deps.sh: the build's and the tests'), builds
# everything and runs every test (the README's test command; .ci/run runs it too). Exits
# non-zero on any failure.
#   BUILD_DIR (default build)   where to build
#   CMAKE_ARGS                  extra configure flags, e.g. -DHOTKEY_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-test-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOTKEY_WERROR=ON ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2
