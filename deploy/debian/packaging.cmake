# The Debian package (CPack's DEB generator), included from the top-level CMakeLists.txt.
#
#   cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
#     -DBUILD_TESTING=OFF -DHOTKEY_BUILD_BENCH=OFF
#   cmake --build build-deb -j2 --target package    # or: cd build-deb && cpack
#   -> build-deb/hotkeyd_<version>_<arch>.deb
# Without the tests and the benchmarks, `all` (which the package target builds first) is the
# libraries and the two shipped programs, hotkeyd and hotkey-sim.
#
# It holds what `cmake --install` installs (hotkeyd, hotkey-sim, the systemd unit and its
# optional socket-activation unit hotkeyd.socket (not enabled by postinst), its defaults
# file, the example rules, the Prometheus/Grafana files, the docs, and what Debian asks of
# every package: the copyright file, the changelog, the lintian overrides), with
# /etc/default/hotkeyd and /etc/hotkeyd/rules.yml as conffiles, and maintainer scripts
# (deploy/debian/postinst, prerm, postrm) that create the hotkeyd system user and
# enable/start/stop the unit the way debhelper's do. Depends: from dpkg-shlibdeps over the
# binaries (dpkg-dev), plus adduser for postinst.
#
# The prefix must be /usr: the unit and the defaults file name the installed paths, written
# from CMAKE_INSTALL_PREFIX at configure time (deploy/CMakeLists.txt), and a package with
# /usr/local paths would break Debian policy. deploy/debian/cpack-options.cmake stops cpack
# with a message in any other build.
# Tested by tests/deploy/package_test.sh (the `package` step of tools/ci-hardening.sh).

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hotkeyd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Maintainer field needs a mail address. The project has none: bugs go to the issue
# tracker (Homepage, and Upstream-Contact in the copyright file). Whoever builds and
# distributes the package sets theirs, as Debian's tools take it (DEBFULLNAME, DEBEMAIL) or
# with -DHOTKEY_DEB_MAINTAINER; the default is an address in the reserved .invalid domain
# (RFC 2606), which says plainly that nobody reads it. deploy/debian/changelog's trailer
# carries the same default.
if(DEFINED ENV{DEBEMAIL})
  set(default_maintainer "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
else()
  set(default_maintainer "hotkeyd developers <maintainers@hotkeyd.invalid>")
endif()
set(HOTKEY_DEB_MAINTAINER "${default_maintainer}" CACHE STRING
    "The Debian package's Maintainer field: name <address>")
set(CPACK_PACKAGE_CONTACT "${HOTKEY_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "hot-key detection sidecar for Redis and memcached, with a Prometheus exporter")
# Lines of at most 80 characters (Debian policy 5.6.13; lintian checks it).
set(CPACK_PACKAGE_DESCRIPTION
    "hotkeyd counts the keys a Redis or memcached shard serves, from fire-and-forget\n\
UDP events or by tapping the shard's traffic, finds the hot ones with a\n\
fixed-memory sketch and exports them, with the advised fix, as Prometheus\n\
metrics. The package ships the daemon, the hotkey-sim simulator, a hardened\n\
systemd unit (with an optional socket-activation unit) and example rules,\n\
alerts and a Grafana dashboard.")
# DESTDIR staging: /etc is an absolute destination for the /usr prefix (deploy/CMakeLists.txt).
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/cpack-options.cmake)
set(CPACK_HOTKEY_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})  # read by cpack-options.cmake

# hotkeyd_<version>_<arch>.deb (no Debian revision: CPACK_DEBIAN_PACKAGE_RELEASE unset).
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE https://github.com/hotkeyd/hotkeyd)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# adduser for postinst; libcap2 for daemon/common/privilege/ (dropping root and capabilities after the
# start), which dpkg-shlibdeps finds too.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, libcap2")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/conffiles ${CMAKE_CURRENT_LIST_DIR}/postinst
    ${CMAKE_CURRENT_LIST_DIR}/prerm ${CMAKE_CURRENT_LIST_DIR}/postrm)

# What Debian policy asks of every binary package (lintian errors without them): the
# machine-readable copyright file (DEP-5) and the changelog (changelog.gz: the version has
# no Debian revision, so the package is native), compressed with gzip -9n as dh_compress
# does (no file name or timestamp in the gzip header). And the lintian overrides, each with
# its reason.
install(FILES ${CMAKE_CURRENT_LIST_DIR}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT hotkeyd)
set(changelog_gz ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.gz)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/debian)
execute_process(COMMAND gzip -9n -c ${CMAKE_CURRENT_LIST_DIR}/changelog OUTPUT_FILE ${changelog_gz}
                COMMAND_ERROR_IS_FATAL ANY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/changelog)
install(FILES ${changelog_gz} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT hotkeyd)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME hotkeyd COMPONENT hotkeyd)

include(CPack)
