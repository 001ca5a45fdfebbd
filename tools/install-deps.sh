#!/usr/bin/env bash
# Installs everything hotkeyd needs to build, test and run, from Debian 12's packages.
# Idempotent; quiet on success. Used by the README's commands and by .ci/run.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libboost1.81-dev       # Asio (UDP, timers, signals) and Beast (HTTP)
  libboost-json1.81-dev  # Boost.JSON: the API's JSON, and the tests' JSON checker
  prometheus-cpp-dev     # metric model and text exposition format
  libabsl-dev            # containers, hashing, strings, status, flags
  catch2                 # unit and end-to-end tests
  libxxhash-dev          # XXH3: the stable, seeded 64-bit key hash
  libyaml-cpp-dev        # the --config.file rules file
  zlib1g-dev             # reading gzip traces in hotkey-sim and the benchmarks
  prometheus             # promtool and a real Prometheus for the deploy tests
  prometheus-alertmanager  # amtool and a real Alertmanager for the inhibit-rule test
  curl python3 python3-yaml procps iproute2   # test scripts
  netcat-openbsd         # nc, for the README's examples
  libssl-dev             # TLS for --web.config.file, through Asio's OpenSSL support
  libcrypt-dev           # crypt(3) from libxcrypt: bcrypt password hashes for basic auth
  apache2-utils          # htpasswd: makes bcrypt hashes in the auth tests
  clang libclang-rt-14-dev   # libFuzzer and ThreadSanitizer builds
  chromium python3-websocket # the landing page test: headless Chromium driven over CDP
  dpkg-dev               # dpkg-shlibdeps: the Debian package's Depends (cpack)
  jsonnet                # deploy/mixin: generates the shipped rules and dashboard
  nodejs                 # node, and npm (bundled in this image's nodejs): the Kubernetes validators
  libpcap-dev            # the tap: capturing a Redis or memcached shard's own traffic
  libcap-dev             # privilege/: dropping root and capabilities once the capture is open
  redis-server redis-tools    # a real Redis, redis-cli and redis-benchmark for the tap tests
  memcached              # a real memcached for the tap tests
  python3-redis python3-pymemcache  # real clients driving them
  golang                 # go: compiles the README's Go example (tests/docs; 63 MB, about 30 s)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
