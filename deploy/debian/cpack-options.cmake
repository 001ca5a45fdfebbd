# Read by cpack at packaging time (CPACK_PROJECT_CONFIG_FILE): refuse to build a package
# whose unit and defaults file name paths outside /usr (see packaging.cmake).
if(CPACK_GENERATOR STREQUAL "DEB" AND NOT CPACK_HOTKEY_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR
    "the Debian package needs a build configured with -DCMAKE_INSTALL_PREFIX=/usr (this one "
    "has ${CPACK_HOTKEY_INSTALL_PREFIX}); e.g. cmake -S . -B build-deb "
    "-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr")
endif()
