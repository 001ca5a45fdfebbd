#!/usr/bin/env bash
# Installs what the tests and the CI stages need besides what building and running needs
# (tools/install-deps.sh, which installs both lists), from Debian 12's packages.
# Idempotent; quiet on success. Run by tools/test.sh, and so by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  catch2                 # unit and end-to-end tests (find_package only when BUILD_TESTING)
  python3 python3-yaml procps iproute2   # test scripts
  flake8  # the Python of tools/, tests/ and the kits checked for undefined names (tests/tools)
  prometheus             # promtool and a real Prometheus for the deploy tests
  prometheus-alertmanager  # amtool and a real Alertmanager for tests/deploy/alertmanager*
  apache2-utils          # htpasswd: makes bcrypt hashes in the auth tests
  clang libclang-rt-14-dev   # libFuzzer and ThreadSanitizer builds (tools/ci-hardening.sh)
  chromium python3-websocket # the landing page test: headless Chromium driven over CDP
  jsonnet                # deploy/mixin: generates the shipped rules and dashboard
  nodejs                 # node, and npm (bundled in this image's nodejs): the Kubernetes validators
  redis-server redis-tools    # a real Redis, redis-cli and redis-benchmark for the tap tests
  memcached              # a real memcached for the tap tests
  python3-redis python3-pymemcache  # real clients driving them
  python3-venv python3-mypy  # the Python kit's tests: installed in a venv as its README says, type-checked
  python3-prometheus-client  # Prometheus's text parser, for tests/e2e/escape_readers_test.py
  golang                 # go: compiles the README's Go example (tests/docs; 63 MB, about 30 s)
  tmux                   # `hotkeyd top`'s test: a real terminal, read with capture-pane
  lintian                # the Debian package's checks (tests/deploy/package_test.sh)
  ccache                 # keeps what a later build compiles again (tools/test.sh, tools/ci-hardening.sh)
  ninja-build            # the test and CI trees' generator: one build graph, no make recursion
)

tools/install-deps.sh "${packages[@]}"
