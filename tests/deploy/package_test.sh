#!/usr/bin/env bash
# package_test.sh: builds the Debian package and installs, runs and purges it on this
# machine, as an operator would.
#
#   1. configures a Release build with -DCMAKE_INSTALL_PREFIX=/usr in BUILD_DIR (an existing
#      Release tree is only given the /usr prefix), builds hotkeyd and hotkey-sim, and runs
#      cpack: BUILD_DIR/hotkeyd_<version>_<arch>.deb
#   2. dpkg-deb -c / -I: the files (with the DEP-5 copyright file and the changelog), the
#      conffiles, Depends from dpkg-shlibdeps, the scripts; then lintian (installed from
#      Debian when missing) must report no error and no warning that is not overridden
#      (deploy/debian/lintian-overrides, each with its reason); its output is printed
#   3. dpkg -i (apt-get install -f for missing dependencies): the hotkeyd system user
#      exists, the conffiles are registered, the unit is enabled (deb-systemd-helper)
#   4. systemd-analyze verify on the installed /usr/lib/systemd/system/hotkeyd.service
#   5. starts the installed /usr/bin/hotkeyd as the hotkeyd user (no systemd runs as PID 1
#      here, so setpriv stands in for User=), with the installed rules file, scrapes
#      /metrics and checks hotkey_build_info names the package's version
#   6. dpkg --purge: the package, its files, its conffiles, the state directory and the
#      unit's enablement are gone; the hotkeyd user stays (Debian leaves system users on
#      purge, see deploy/debian/postrm), and is removed here if this test created it
#
# Usage: tests/deploy/package_test.sh [BUILD_DIR]   (default build-package)
# Needs root (dpkg -i), dpkg-dev (dpkg-shlibdeps), curl, systemd (systemd-analyze), lintian
# (tools/install-test-deps.sh; apt-get installs it here otherwise). Run by
# the `package` step of tools/ci-hardening.sh, not by ctest: it changes the machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/lib/e2e.sh
e2e_init package
build=${1:-build-package}
jobs=${JOBS:-2}

[ "$(id -u)" -eq 0 ] || fail "needs root (dpkg -i)"
for tool in dpkg-shlibdeps dpkg-deb systemd-analyze setpriv curl; do
  command -v "$tool" >/dev/null || fail "$tool not found (tools/install-deps.sh)"
done
if ! command -v lintian >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian \
    >"$tmp/apt-lintian.log" 2>&1 || fail "apt-get install lintian failed"
fi
if dpkg-query -W -f='${Status}' hotkeyd 2>/dev/null | grep -q 'install ok installed'; then
  fail "a hotkeyd package is already installed here; dpkg --purge hotkeyd first"
fi
user_existed=0
id hotkeyd >/dev/null 2>&1 && user_existed=1
installed=0
e2e_on_exit() {
  if [ "$installed" -eq 1 ]; then dpkg --purge hotkeyd >/dev/null 2>&1 || true; fi
  if [ "$user_existed" -eq 0 ] && id hotkeyd >/dev/null 2>&1; then
    deluser --system --quiet hotkeyd >/dev/null 2>&1 || true
  fi
}

# 1. Build. An existing Release tree (tools/test.sh's, in CI) is only reconfigured for the
# /usr prefix, which changes the installed paths and recompiles nothing; an empty directory
# is configured as a packager would. ccache when present.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ -f "$build/CMakeCache.txt" ]; then
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ "$build_type" = Release ] || fail "$build is a $build_type tree; the package needs a Release one"
  cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX=/usr >"$tmp/configure.log" 2>&1
else
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DBUILD_TESTING=OFF -DHOTKEY_BUILD_BENCH=OFF -DHOTKEY_WERROR=ON "${launcher[@]}" \
    >"$tmp/configure.log" 2>&1
fi
cmake --build "$build" -j"$jobs" --target hotkeyd hotkey-sim >"$tmp/build.log" 2>&1
rm -f "$build"/hotkeyd_*.deb
(cd "$build" && cpack) >"$tmp/cpack.log" 2>&1
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
deb=$build/hotkeyd_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || fail "cpack did not write $deb: $(ls "$build"/*.deb 2>/dev/null)"
log "ok: built $deb ($(stat -c %s "$deb") bytes)"

# 2. Contents and control fields.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/contents"
for f in /usr/bin/hotkeyd /usr/bin/hotkey-sim /usr/lib/systemd/system/hotkeyd.service \
         /usr/lib/systemd/system/hotkeyd.socket \
         /etc/default/hotkeyd /etc/hotkeyd/rules.yml /usr/share/hotkeyd/hotkeyd.rules.yml \
         /usr/share/hotkeyd/hotkeyd-dashboard.json /usr/share/doc/hotkeyd/README.md \
         /usr/share/doc/hotkeyd/copyright /usr/share/doc/hotkeyd/changelog.gz \
         /usr/share/lintian/overrides/hotkeyd; do
  grep -qxF "$f" "$tmp/contents" || fail "$deb lacks $f"
done
if grep -q '^/usr/local\|^/usr/etc' "$tmp/contents"; then
  fail "$deb has files under /usr/local or /usr/etc: $(grep '^/usr/local\|^/usr/etc' "$tmp/contents")"
fi
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles >"$tmp/conffiles"
diff <(sort "$tmp/conffiles") <(printf '/etc/default/hotkeyd\n/etc/hotkeyd/rules.yml\n') ||
  fail "conffiles are not exactly the defaults file and the rules file"
[ "$(dpkg-deb -f "$deb" Package)" = hotkeyd ] || fail "Package: $(dpkg-deb -f "$deb" Package)"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version: $(dpkg-deb -f "$deb" Version)"
depends=$(dpkg-deb -f "$deb" Depends)
for d in adduser libc6 libstdc++6 libssl3 libyaml-cpp libcap2; do
  grep -q "$d" <<<"$depends" || fail "Depends lacks $d (dpkg-shlibdeps?): $depends"
done
info=$(dpkg-deb -I "$deb")
for script in postinst prerm postrm; do
  grep -q " $script " <<<"$info" || fail "no $script in $deb"
done
log "ok: contents, conffiles and Depends ($depends)"

# The changelog's latest entry is this version (a version bump needs its entry).
changelog_version=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
[ "$changelog_version" = "$version" ] ||
  fail "deploy/debian/changelog's latest entry is $changelog_version, the package is $version"
# No error (E:) and no warning (W:); informational tags (I:) and the overridden ones (O:,
# each with its reason as N: lines) are shown but do not fail. Tags are read from the output
# because --fail-on counts overridden tags when --show-overrides is on. Running it as root
# only adds a notice.
lintian --display-info --show-overrides "$deb" >"$tmp/lintian.log" 2>&1 ||
  fail "lintian $deb failed: $(cat "$tmp/lintian.log")"
if grep -q '^[EW]: ' "$tmp/lintian.log"; then
  cat "$tmp/lintian.log" >&4
  fail "lintian $deb: errors or warnings (above)"
fi
grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/    lintian: /' >&3 || true
log "ok: lintian $(lintian --version | awk '{print $2}'): no errors, no warnings beyond the overrides"

# 3. Install.
installed=1
if ! dpkg -i "$deb" >"$tmp/dpkg-install.log" 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -f -y -qq >>"$tmp/dpkg-install.log" 2>&1
fi
dpkg-query -W -f='${Status}' hotkeyd | grep -q 'install ok installed' ||
  fail "hotkeyd is not installed: $(dpkg-query -W -f='${Status}' hotkeyd)"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd hotkeyd) || fail "no hotkeyd user"
[ "$uid" -lt 1000 ] || fail "hotkeyd is not a system user (uid $uid)"
[ "$home" = /nonexistent ] || fail "hotkeyd user has home $home"
case $shell in */nologin | */false) ;; *) fail "hotkeyd user has login shell $shell" ;; esac
getent group hotkeyd >/dev/null || fail "no hotkeyd group"
dpkg-query -W -f='${Conffiles}\n' hotkeyd >"$tmp/registered"
for f in /etc/default/hotkeyd /etc/hotkeyd/rules.yml; do
  grep -q "^ $f " "$tmp/registered" || fail "$f is not a registered conffile"
done
[ -L /etc/systemd/system/multi-user.target.wants/hotkeyd.service ] ||
  fail "postinst did not enable hotkeyd.service"
log "ok: installed; user hotkeyd (uid $uid, $shell), conffiles registered, unit enabled"

# 4. The installed unit.
unit=/usr/lib/systemd/system/hotkeyd.service
grep -q '^ExecStart=/usr/bin/hotkeyd \$HOTKEYD_ARGS$' "$unit" || fail "ExecStart: $(grep ExecStart "$unit")"
grep -q '^EnvironmentFile=-/etc/default/hotkeyd$' "$unit" || fail "EnvironmentFile: $(grep EnvironmentFile "$unit")"
grep -q '^User=hotkeyd$' "$unit" || fail "the unit does not run as hotkeyd"
grep -q -- '--config.file=/etc/hotkeyd/rules.yml' /etc/default/hotkeyd ||
  fail "/etc/default/hotkeyd does not name /etc/hotkeyd/rules.yml"
systemd-analyze verify "$unit" >"$tmp/verify.log" 2>&1 || true
if grep -i 'hotkeyd' "$tmp/verify.log"; then fail "systemd-analyze verify $unit (above)"; fi
log "ok: systemd-analyze verify $unit"
socket_unit=/usr/lib/systemd/system/hotkeyd.socket
systemd-analyze verify "$socket_unit" >"$tmp/verify-socket.log" 2>&1 || true
if grep -i 'hotkeyd' "$tmp/verify-socket.log"; then fail "systemd-analyze verify $socket_unit (above)"; fi
[ ! -e /etc/systemd/system/sockets.target.wants/hotkeyd.socket ] ||
  fail "postinst enabled hotkeyd.socket (socket activation is the operator's choice)"
log "ok: systemd-analyze verify $socket_unit; not enabled"

# 5. Run it as the unit would: the hotkeyd user, no new privileges, the installed rules.
# setpriv switches the user itself, so hotkeyd keeps the one it is given: no --run-as.
e2e_keep_user=()
web=$(free_port tcp)
udp=$(free_port udp)
e2e_start_hotkeyd setpriv "http://127.0.0.1:$web" --reuid=hotkeyd --regid=hotkeyd \
  --init-groups --no-new-privs /usr/bin/hotkeyd --web.listen-address="127.0.0.1:$web" \
  --udp.listen-address="127.0.0.1:$udp" --config.file=/etc/hotkeyd/rules.yml
[ "$(ps -o user= -p "$hotkeyd_pid")" = hotkeyd ] || fail "hotkeyd runs as $(ps -o user= -p "$hotkeyd_pid")"
curl -sf --max-time 5 "http://127.0.0.1:$web/metrics" >"$tmp/metrics.txt"
grep -E "^hotkey_build_info\{.*version=\"$version\"" "$tmp/metrics.txt" >&3 ||
  fail "no hotkey_build_info with version=\"$version\" in /metrics"
kill "$hotkeyd_pid"
wait "$hotkeyd_pid" 2>/dev/null || true
log "ok: /usr/bin/hotkeyd ran as hotkeyd and served /metrics"

# 6. Purge.
dpkg --purge hotkeyd >"$tmp/dpkg-purge.log" 2>&1
installed=0
if dpkg-query -W -f='${Status}' hotkeyd 2>/dev/null | grep -q 'installed'; then
  fail "hotkeyd still installed after purge"
fi
for f in $(cat "$tmp/contents") /etc/hotkeyd /var/lib/hotkeyd /var/lib/private/hotkeyd \
         /etc/systemd/system/multi-user.target.wants/hotkeyd.service; do
  case $f in */ | /etc | /usr | /usr/bin | /usr/lib | /usr/share | /usr/share/doc | \
    /usr/lib/systemd | /usr/lib/systemd/system | /etc/default) continue ;; esac
  [ ! -e "$f" ] || fail "$f is left after dpkg --purge"
done
id hotkeyd >/dev/null 2>&1 || fail "purge removed the hotkeyd user (postrm says it stays)"
log "ok: purged; every file is gone, the hotkeyd system user stays (Debian practice)"
log "package test passed"
