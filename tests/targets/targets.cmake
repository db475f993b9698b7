# Programs profiled by the integration tests. Built with -O1 so the work is not optimized away
# but stays in the named functions; noinline attributes in the sources keep functions distinct.
add_custom_target(np_test_targets)
function(np_test_target name)
  cmake_parse_arguments(ARG "" "" "SOURCES;FLAGS;LINK" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${ARG_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${NATIVEPROF_TARGETS_DIR})
  add_dependencies(np_test_targets ${name})
endfunction()
np_test_target(stat_workload SOURCES ${CMAKE_CURRENT_LIST_DIR}/stat_workload.cc FLAGS -O1 LINK pthread)
# Symbolizer test programs (issue 5).
include(${CMAKE_CURRENT_LIST_DIR}/sym_targets.cmake)
