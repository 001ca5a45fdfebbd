#!/usr/bin/env bash
# Installs what building and running hotkeyd needs, from Debian 12's packages: the compiler,
# CMake and the libraries. The tests' tools (Catch2, Prometheus, Redis, Chromium, ...) are
# tools/install-test-deps.sh's, which tools/test.sh runs. Idempotent; quiet on success.
# Used by the README's commands.
#   tools/install-deps.sh [PACKAGE...]   also installs the packages named (as
#                                        install-test-deps.sh does)
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libboost1.81-dev       # Asio (UDP, timers, signals) and Beast (HTTP)
  libboost-json1.81-dev  # Boost.JSON: the API's JSON
  prometheus-cpp-dev     # metric model and text exposition format
  libabsl-dev            # containers, hashing, strings, status, flags
  libxxhash-dev          # XXH3: the stable, seeded 64-bit key hash
  libyaml-cpp-dev        # the --config.file rules file
  zlib1g-dev             # gzip: compressed /metrics, and traces in hotkey-sim
  libssl-dev             # TLS for --web.config.file, through Asio's OpenSSL support
  libcrypt-dev           # crypt(3) from libxcrypt: bcrypt password hashes for basic auth
  libpcap-dev            # the tap: capturing a Redis or memcached shard's own traffic
  libcap-dev             # daemon/common/privilege/: dropping root and capabilities once the capture is open
  dpkg-dev               # dpkg-shlibdeps: the Debian package's Depends (cpack)
  curl netcat-openbsd    # the README's examples: reading /metrics, sending an event with nc
  "$@"
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
