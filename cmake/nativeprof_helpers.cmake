# nativeprof_module(NAME DEPS ...): one static library per source directory, built from every
# .cc file in it, so adding a file needs no CMake edit. Headers are included as "dir/file.h".
function(nativeprof_module name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_main\\.cc$")
  if(NOT srcs)
    # A module with only headers so far.
    add_library(np_${name} INTERFACE)
    target_include_directories(np_${name} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(np_${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(np_${name} STATIC ${srcs})
  target_include_directories(np_${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(np_${name} PUBLIC ${ARG_DEPS})
  set_target_properties(np_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
