# Dependencies a target may link from their static archives instead of their shared libraries.
#
# Every run of `nativeprof` pays for loading its shared libraries before main(), and again in
# each process it forks before exec'ing the target (lazy binding is resolved anew there): with
# Abseil's ~40 libraries and elfutils' compression libraries that was 46 shared objects, against
# 10 now (`nativeprof --version` 17.6 -> 10.8 ms in alternating runs on a noisy VM). An executable target that sets the property
# NATIVEPROF_STATIC_DEPS gets the archives; everything else (the tests, libnativeprof.so, whose
# position-independent code cannot take Abseil's local-exec TLS) keeps the shared libraries.
# The modules link np_absl_deps and np_elfutils_deps, never the imported targets directly, so the
# choice is made once, per final link, by the target being linked.
#
# libunwind's archive is not position-independent, and spdlog and fmt ship no archive in
# Debian: those stay shared everywhere.

set(NATIVEPROF_STATIC_DEPS_ON "$<BOOL:$<TARGET_PROPERTY:NATIVEPROF_STATIC_DEPS>>")

# The archive beside a shared library (libX.so[.N...] -> libX.a), or "" when there is none.
function(nativeprof_archive_of shared_path out)
  string(REGEX REPLACE "\\.so(\\.[0-9]+)*$" ".a" archive "${shared_path}")
  if(archive STREQUAL shared_path OR NOT EXISTS "${archive}")
    set(archive "")
  endif()
  set(${out} "${archive}" PARENT_SCOPE)
endfunction()

# The file an imported target links, whichever configuration its package recorded.
function(nativeprof_imported_file target out)
  set(file "")
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
    foreach(config IN LISTS configs ITEMS "")
      if(config)
        get_target_property(file ${target} IMPORTED_LOCATION_${config})
      else()
        get_target_property(file ${target} IMPORTED_LOCATION)
      endif()
      if(file)
        break()
      endif()
    endforeach()
  endif()
  if(NOT file)
    set(file "")
  endif()
  set(${out} "${file}" PARENT_SCOPE)
endfunction()

# np_<name>_deps: links `shared_items` for an ordinary target and, for one with
# NATIVEPROF_STATIC_DEPS, `archives` in one group (they refer to each other in no fixed order;
# the linker takes only the members something needs). Falls back to the shared items when an
# archive is missing (the caller then passes none), so a machine without them still builds.
function(nativeprof_dependency_set name)
  cmake_parse_arguments(ARG "" "" "SHARED;ARCHIVES" ${ARGN})
  add_library(np_${name}_deps INTERFACE)
  if(NOT ARG_ARCHIVES OR NOT NATIVEPROF_STATIC_DEPS OR NATIVEPROF_BUILD_FUZZERS)
    target_link_libraries(np_${name}_deps INTERFACE ${ARG_SHARED})
    return()
  endif()
  # One group, rescanned (CMake dedupes repeated -Wl,--start-group items, so not by hand).
  list(JOIN ARG_ARCHIVES "," archives)
  list(JOIN ARG_SHARED "$<SEMICOLON>" shared)
  target_link_libraries(np_${name}_deps INTERFACE
    "$<IF:${NATIVEPROF_STATIC_DEPS_ON},$<LINK_GROUP:RESCAN,${archives}>,${shared}>")
endfunction()

option(NATIVEPROF_STATIC_DEPS
  "Link the nativeprof executable against static Abseil and elfutils archives" ON)

# Abseil: every archive the package installed (members are pulled in only when referenced).
set(absl_shared absl::status absl::statusor absl::strings absl::str_format absl::flat_hash_map
    absl::flat_hash_set absl::hash absl::time absl::cleanup)
set(absl_archives "")
nativeprof_imported_file(absl::strings absl_strings_file)
if(absl_strings_file)
  get_filename_component(absl_dir "${absl_strings_file}" DIRECTORY)
  file(GLOB absl_archives "${absl_dir}/libabsl_*.a")
endif()
nativeprof_dependency_set(absl SHARED ${absl_shared} ARCHIVES ${absl_archives})

# elfutils and the compression libraries it and the module loader use. pkg-config's
# *_LINK_LIBRARIES hold the full paths of the shared libraries.
set(elfutils_archives "")
foreach(shared IN LISTS LIBDW_LINK_LIBRARIES LIBELF_LINK_LIBRARIES LIBLZMA_LINK_LIBRARIES
        LIBZSTD_LINK_LIBRARIES LIBDEFLATE_LINK_LIBRARIES ZLIB_LIBRARIES)
  nativeprof_archive_of("${shared}" archive)
  if(NOT archive)
    set(elfutils_archives "")
    break()
  endif()
  list(APPEND elfutils_archives "${archive}")
endforeach()
# libdw's archive also needs bzip2's (its shared library brings it along by itself).
if(elfutils_archives)
  find_library(NATIVEPROF_BZ2_ARCHIVE NAMES libbz2.a)
  if(NATIVEPROF_BZ2_ARCHIVE)
    list(APPEND elfutils_archives "${NATIVEPROF_BZ2_ARCHIVE}")
  else()
    set(elfutils_archives "")
  endif()
endif()
list(REMOVE_DUPLICATES elfutils_archives)
nativeprof_dependency_set(elfutils
  SHARED PkgConfig::LIBDW PkgConfig::LIBELF PkgConfig::LIBLZMA PkgConfig::LIBZSTD
         PkgConfig::LIBDEFLATE ZLIB::ZLIB
  ARCHIVES ${elfutils_archives})
