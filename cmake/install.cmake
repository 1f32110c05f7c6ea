# `cmake --install build --prefix DIR`: the wzvm command, its HTTP plugin,
# the three libraries with the public headers, and a CMake package, so that
# another project does
#   find_package(wzvm REQUIRED)
#   target_link_libraries(app PRIVATE wzvm::vm wzvm::wasi wzvm::profiler)
# (examples/embed builds exactly that against an installed tree). `cpack -G
# DEB` in the build tree packages the same files (cmake/package.cmake).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Headers keep their paths ("vm/module.h") under include/wzvm/, so an
# installed tree is included as the source tree is, without claiming
# include/vm/ for itself.
set(WZVM_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/wzvm)
set(WZVM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/wzvm)

# The public API (docs/EMBEDDING.md): load and run (vm/module.h,
# vm/runtime.h, vm/interp.h for the thread's limits), WASI (wasi/wasi.h),
# profilers and their output (profiler/profiler.h, pprof.h,
# instruction_profile.h, testing.h, diff.h, viewers.h), and what those
# include. The list is checked: examples/embed, built against the installed
# tree by the `install-and-embed` test, includes every entry header.
set(WZVM_PUBLIC_HEADERS
  vm/module.h vm/runtime.h vm/result.h vm/interp.h vm/profiling.h vm/span_table.h vm/code.h
  vm/iops.inc vm/opcodes.def vm/internal_ops.def vm/counted_ops.def vm/chains.def vm/mem_pairs.def vm/switch_pairs.def vm/step_jumps.def vm/load_jumps.def vm/features.def vm/traps.def
  wasi/wasi.h wasi/deterministic.h wasi/guest_memory.h wasi/sandbox.h wasi/types.h wasi/errno.def wasi/wasi_api.def
  profiler/profiler.h profiler/cpython.h profiler/memory.h profiler/sampler.h profiler/pprof.h
  profiler/instruction_profile.h profiler/testing.h profiler/diff.h profiler/viewers.h)
foreach(h ${WZVM_PUBLIC_HEADERS})
  get_filename_component(dir ${h} DIRECTORY)
  install(FILES ${CMAKE_SOURCE_DIR}/${h} DESTINATION ${WZVM_INSTALL_INCLUDEDIR}/${dir} COMPONENT dev)
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/profiler/gen/profiler/profile.pb.h
        DESTINATION ${WZVM_INSTALL_INCLUDEDIR}/profiler COMPONENT dev)

set_target_properties(wzvm_vm PROPERTIES EXPORT_NAME vm)
set_target_properties(wzvm_wasi PROPERTIES EXPORT_NAME wasi)
set_target_properties(wzvm_profiler PROPERTIES EXPORT_NAME profiler)
install(TARGETS wzvm_vm wzvm_wasi wzvm_profiler EXPORT wzvmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${WZVM_INSTALL_INCLUDEDIR})
install(EXPORT wzvmTargets NAMESPACE wzvm:: DESTINATION ${WZVM_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/wzvmConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/wzvmConfig.cmake
                              INSTALL_DESTINATION ${WZVM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/wzvmConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/wzvmConfig.cmake ${CMAKE_BINARY_DIR}/cmake/wzvmConfigVersion.cmake
        DESTINATION ${WZVM_INSTALL_CMAKEDIR} COMPONENT dev)

# The command, and its plugin where profiler/http.cc looks for it: beside
# the binary in a build tree, LIBDIR/wzvm/ when installed (found relative to
# the binary, so any --prefix works).
install(TARGETS wzvm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS wzvm_http LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/wzvm COMPONENT runtime)
file(RELATIVE_PATH _wzvm_plugin_reldir ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR}/wzvm)
target_compile_definitions(wzvm_profiler PRIVATE WZVM_PLUGIN_RELDIR="${_wzvm_plugin_reldir}")
