#!/usr/bin/env bash
# cmake --install into a throwaway prefix puts hotkeyd, hotkey-sim, the systemd unit, its
# defaults file and the example rules where the unit expects them, and the installed
# hotkeyd runs and reports its revision.
set -euo pipefail
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

prefix=$tmp/local
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/hotkeyd bin/hotkey-sim lib/systemd/system/hotkeyd.service \
         lib/systemd/system/hotkeyd.socket etc/default/hotkeyd \
         etc/hotkeyd/rules.yml share/hotkeyd/hotkeyd.rules.yml share/doc/hotkeyd/README.md; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
done
[ -x "$prefix/bin/hotkeyd" ] || fail "hotkeyd is not executable"
"$prefix/bin/hotkeyd" --version | grep -q '^hotkeyd, version .* (branch: .*, revision: ' ||
  fail "installed hotkeyd --version: $("$prefix/bin/hotkeyd" --version)"
"$prefix/bin/hotkey-sim" --help >/dev/null 2>&1 || fail "installed hotkey-sim --help fails"
# The rules file installed is the example rules file, byte for byte.
cmp -s "$prefix/etc/hotkeyd/rules.yml" "$(dirname "$0")/../../../../config/example-rules.yml" ||
  fail "installed rules.yml differs from config/example-rules.yml"

# The unit and the defaults file name the paths of the prefix configured into the build
# (CMAKE_INSTALL_PREFIX; --prefix at install time moves the files, as DESTDIR does, not the
# paths written in them).
unit=$prefix/lib/systemd/system/hotkeyd.service
bindir=$(sed -n 's/^CMAKE_INSTALL_BINDIR:PATH=//p' "$build/CMakeCache.txt")
configured_prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
grep -q "^ExecStart=$configured_prefix/$bindir/hotkeyd " "$unit" ||
  fail "unit ExecStart does not name $configured_prefix/$bindir/hotkeyd: $(grep ExecStart "$unit")"
grep -q '^EnvironmentFile=-.*/default/hotkeyd$' "$unit" || fail "unit lost its EnvironmentFile"
grep -q -- '--config.file=.*/hotkeyd/rules.yml' "$prefix/etc/default/hotkeyd" ||
  fail "defaults file does not name the rules file"
if command -v systemd-analyze >/dev/null; then
  # verify checks that ExecStart's binary exists: point a copy at the installed one.
  sed "s|^ExecStart=[^ ]*|ExecStart=$prefix/bin/hotkeyd|" "$unit" >"$tmp/hotkeyd.service"
  out=$(systemd-analyze verify "$tmp/hotkeyd.service" 2>&1 || true)
  if grep -v -e 'hotkeyd.service: Command .* is not executable' <<<"$out" | grep -qi 'hotkeyd.service'; then
    fail "systemd-analyze verify: $out"
  fi
  # The socket unit, beside the service it activates.
  cp "$prefix/lib/systemd/system/hotkeyd.socket" "$tmp/hotkeyd.socket"
  out=$(systemd-analyze verify "$tmp/hotkeyd.socket" 2>&1 || true)
  if grep -v -e 'hotkeyd.service: Command .* is not executable' <<<"$out" | grep -qi 'hotkeyd\.s'; then
    fail "systemd-analyze verify hotkeyd.socket: $out"
  fi
fi
echo "install layout ok: $prefix"
