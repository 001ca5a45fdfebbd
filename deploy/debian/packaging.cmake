# The Debian package (CPack's DEB generator), included from the top-level CMakeLists.txt.
#
#   cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr
#   cmake --build build-deb -j2 --target package    # or: cd build-deb && cpack
#   -> build-deb/hotkeyd_<version>_<arch>.deb
#
# It holds what `cmake --install` installs (hotkeyd, hotkey-sim, the systemd unit and its
# optional socket-activation unit hotkeyd.socket (not enabled by postinst), its defaults file, the example rules, the Prometheus/Grafana files and the docs), with
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
set(CPACK_PACKAGE_CONTACT "hotkeyd developers <https://github.com/hotkeyd/hotkeyd/issues>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "hot-key detection sidecar for Redis, with a Prometheus exporter")
set(CPACK_PACKAGE_DESCRIPTION
    "hotkeyd counts the keys a Redis shard serves from fire-and-forget UDP events, finds the\n\
hot ones with a fixed-memory sketch and exports them, with the advised fix, as Prometheus\n\
metrics. The package ships the daemon, the hotkey-sim simulator, a hardened systemd unit\n\
(with an optional socket-activation unit) and example rules, alerts and a Grafana dashboard.")
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
# adduser for postinst; libcap2 for privilege/ (dropping root and capabilities after the
# start), which dpkg-shlibdeps finds too.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, libcap2")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/conffiles ${CMAKE_CURRENT_LIST_DIR}/postinst
    ${CMAKE_CURRENT_LIST_DIR}/prerm ${CMAKE_CURRENT_LIST_DIR}/postrm)

include(CPack)
