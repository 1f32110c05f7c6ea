# `cpack -G DEB` in the build tree: one Debian package of what `cmake
# --install` installs (the command, its plugin, the libraries, headers and
# CMake package), under /usr. Its Depends are computed by dpkg-shlibdeps from
# the libraries the binaries actually link (dpkg-dev), not written by hand.
set(CPACK_PACKAGE_NAME wzvm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "wzvm")
set(CPACK_PACKAGE_CONTACT "wzvm developers <wzvm@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "WebAssembly interpreter and WASI runtime with profilers in its dispatch loop")
set(CPACK_PACKAGE_DESCRIPTION
    "wzvm runs WebAssembly modules and WASI preview1 programs and profiles them from inside the interpreter: guest CPU time without host calls, allocations at their call sites, and exact instruction counts, written as pprof profiles. Also the C++ libraries and headers to embed it (CMake package wzvm).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Embedding (the static libraries' own dependencies, for find_package(wzvm)).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libprotobuf-dev, zlib1g-dev, libdeflate-dev, nlohmann-json3-dev, libdwarf-dev, golang-go")
set(CPACK_GENERATOR DEB)
include(CPack)
