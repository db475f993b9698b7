# libnativeprof: the shared library (C API in include/nativeprof/nativeprof.h, header-only C++ and
# Google Benchmark APIs over it), its install rules, the CMake package and the pkg-config file.
# Included from library/CMakeLists.txt; the engine is np_library (library/self_profiler.cc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The C API object is compiled into the library itself (np_library has a copy for the tests);
# the rest of np_library is pulled in as needed and hidden by the version script.
add_library(nativeprof_lib SHARED ${PROJECT_SOURCE_DIR}/library/c_api.cc)
target_link_libraries(nativeprof_lib PRIVATE np_library)
target_link_libraries(nativeprof_lib INTERFACE absl::status absl::statusor)
target_include_directories(nativeprof_lib PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_options(nativeprof_lib PRIVATE
  -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/nativeprof.map)
if(NOT NATIVEPROF_BUILD_FUZZERS)
  # Sanitizer runtimes leave undefined symbols in shared libraries by design.
  target_link_options(nativeprof_lib PRIVATE -Wl,--no-undefined)
endif()
set_target_properties(nativeprof_lib PROPERTIES
  OUTPUT_NAME nativeprof
  EXPORT_NAME nativeprof
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/nativeprof.map)
add_library(nativeprof::nativeprof ALIAS nativeprof_lib)

# Everything here is in the `library` component, so `cmake --install B --component library`
# installs just the library (tests/integration/library_install_test.cc does that).
install(TARGETS nativeprof_lib EXPORT nativeprofTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library)
install(FILES
  ${PROJECT_SOURCE_DIR}/include/nativeprof/nativeprof.h
  ${PROJECT_SOURCE_DIR}/include/nativeprof/profiler.h
  ${PROJECT_SOURCE_DIR}/include/nativeprof/benchmark.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nativeprof COMPONENT library)
install(EXPORT nativeprofTargets NAMESPACE nativeprof::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nativeprof COMPONENT library)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nativeprofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/nativeprofConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nativeprof)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nativeprofConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nativeprofConfig.cmake
  ${PROJECT_BINARY_DIR}/nativeprofConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nativeprof COMPONENT library)
# The .pc file finds its prefix relative to itself, so `cmake --install --prefix X` works.
file(RELATIVE_PATH NATIVEPROF_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" NATIVEPROF_PC_TO_PREFIX "${NATIVEPROF_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/nativeprof.pc.in ${PROJECT_BINARY_DIR}/nativeprof.pc
  @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/nativeprof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT library)
