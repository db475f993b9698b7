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
# DWARF unwinding (issue 4): programs without frame pointers, so only CFI unwinds them.
add_library(nofp_shared SHARED ${CMAKE_CURRENT_LIST_DIR}/nofp_shared.c)
target_compile_options(nofp_shared PRIVATE -O2 -fomit-frame-pointer)
set_target_properties(nofp_shared PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NATIVEPROF_TARGETS_DIR})
np_test_target(nofp_workload SOURCES ${CMAKE_CURRENT_LIST_DIR}/nofp_workload.c
               FLAGS -O2 -fomit-frame-pointer LINK nofp_shared pthread)
# The same linked by lld, whose layout puts a segment's p_vaddr a page apart from its p_offset
# (as every Rust binary since 1.90 has): the kernel maps it from the page below p_offset.
find_program(NP_LLD ld.lld)
if(NP_LLD)
  np_test_target(nofp_workload_lld SOURCES ${CMAKE_CURRENT_LIST_DIR}/nofp_workload.c
                 FLAGS -O2 -fomit-frame-pointer LINK nofp_shared pthread -fuse-ld=lld)
endif()
np_test_target(nofp_cpp SOURCES ${CMAKE_CURRENT_LIST_DIR}/nofp_cpp.cc FLAGS -O2 -fomit-frame-pointer)
np_test_target(dwarf_capture SOURCES ${CMAKE_CURRENT_LIST_DIR}/dwarf_capture.cc LINK np_unwind)
# Symbolizer test programs (issue 5).
include(${CMAKE_CURRENT_LIST_DIR}/sym_targets.cmake)
# Frame-pointer targets for `record` (issue 2): no inlining and no sibling calls, so every
# function named in the source is a frame in the kernel's callchain.
set(NP_FP_FLAGS -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline)
np_test_target(fp_split SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp_split.c FLAGS ${NP_FP_FLAGS})
np_test_target(fp_threads SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp_threads.c FLAGS ${NP_FP_FLAGS}
               LINK pthread)
np_test_target(fp_fork_exec SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp_fork_exec.c FLAGS ${NP_FP_FLAGS})
np_test_target(memfd_exec SOURCES ${CMAKE_CURRENT_LIST_DIR}/memfd_exec.c)
np_test_target(fp_until_signal SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp_until_signal.c
               FLAGS ${NP_FP_FLAGS})
np_test_target(fp_split_nopie SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp_split.c
               FLAGS ${NP_FP_FLAGS} -fno-pie LINK -no-pie)
# The DWARF workload with frame pointers: its deep recursion outgrows the stack copy, and the
# kernel's frame-pointer chain can finish the unwind (the hybrid splice).
np_test_target(dwarf_fp_deep SOURCES ${CMAKE_CURRENT_LIST_DIR}/nofp_workload.c
               FLAGS -O2 -fno-omit-frame-pointer LINK nofp_shared pthread)
# Recursion whose innermost level works on a shrink-wrapped path, outside its own frame.
np_test_target(fp_edge_recurse SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp_edge_recurse.c
               FLAGS -O2 -fno-omit-frame-pointer)
np_test_target(attach_server SOURCES ${CMAKE_CURRENT_LIST_DIR}/attach_server.c FLAGS ${NP_FP_FLAGS}
               LINK pthread)
# Overload (issue 15): more always-runnable threads than the CPUs can serve.
np_test_target(overload_spinners SOURCES ${CMAKE_CURRENT_LIST_DIR}/overload_spinners.c
               FLAGS ${NP_FP_FLAGS} LINK pthread)
# libnativeprof (issue 6): the sample benchmark of bench/ linked against the shared library, so the
# integration tests check its output (and the library gets built before them).
find_package(benchmark QUIET)
if(benchmark_FOUND)
  set(np_gbench_flags ${NP_FP_FLAGS})
  if(benchmark_VERSION VERSION_GREATER_EQUAL 1.8.5)
    list(APPEND np_gbench_flags -DNATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER=1)
  endif()
  np_test_target(gbench_profiled SOURCES ${PROJECT_SOURCE_DIR}/bench/gbench_profiled_benchmark.cc
                 FLAGS ${np_gbench_flags} LINK nativeprof_lib benchmark::benchmark)
endif()
# Off-CPU ground truth (issue 12): threads that block for known times, spinners sharing one CPU,
# and a pipe ping-pong.
np_test_target(offcpu_workload SOURCES ${CMAKE_CURRENT_LIST_DIR}/offcpu_workload.c
               FLAGS ${NP_FP_FLAGS} LINK pthread)
# Allocation profiler ground truth: known calls, bytes, temporaries, peak and leaks per site.
np_test_target(alloc_workload SOURCES ${CMAKE_CURRENT_LIST_DIR}/alloc_workload.c
               FLAGS ${NP_FP_FLAGS} LINK pthread)
np_test_target(alloc_cxx SOURCES ${CMAKE_CURRENT_LIST_DIR}/alloc_cxx.cc FLAGS ${NP_FP_FLAGS}
               LINK pthread)
# A user's LD_PRELOAD that replaces malloc, as jemalloc does (record --alloc leaves it out).
add_library(alloc_standin SHARED ${CMAKE_CURRENT_LIST_DIR}/alloc_standin.c)
target_compile_options(alloc_standin PRIVATE -O1 -fno-builtin)
set_target_properties(alloc_standin PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NATIVEPROF_TARGETS_DIR})
add_dependencies(np_test_targets alloc_standin)
# Programs whose malloc is not glibc's, which record --alloc refuses: one linked to the stand-in
# (found through its RUNPATH), one with the stand-in compiled into the executable.
np_test_target(alloc_linked_standin SOURCES ${CMAKE_CURRENT_LIST_DIR}/alloc_workload.c
               FLAGS ${NP_FP_FLAGS} LINK alloc_standin pthread)
# ... and one that links it through a library of its own.
add_library(alloc_via_standin SHARED ${CMAKE_CURRENT_LIST_DIR}/nofp_shared.c)
target_link_libraries(alloc_via_standin PRIVATE -Wl,--no-as-needed alloc_standin)
set_target_properties(alloc_via_standin PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NATIVEPROF_TARGETS_DIR})
np_test_target(alloc_linked_via SOURCES ${CMAKE_CURRENT_LIST_DIR}/alloc_workload.c
               FLAGS ${NP_FP_FLAGS} LINK -Wl,--no-as-needed alloc_via_standin pthread)
np_test_target(alloc_own_malloc SOURCES ${CMAKE_CURRENT_LIST_DIR}/alloc_workload.c
               ${CMAKE_CURRENT_LIST_DIR}/alloc_standin.c FLAGS ${NP_FP_FLAGS} -fno-builtin
               LINK pthread)
# Static: LD_PRELOAD cannot reach it, and glibc's static start-up mallocs a few blocks itself.
np_test_target(alloc_static SOURCES ${CMAKE_CURRENT_LIST_DIR}/alloc_workload.c
               FLAGS ${NP_FP_FLAGS} -static LINK -static pthread)
if(NP_RUSTC)
  set(ALLOC_RUST_FLAGS -C opt-level=1 -C debuginfo=2 -C force-frame-pointers=yes)
  # Legacy is rustc's default; v0 is accepted on stable, so neither needs unstable options.
  foreach(variant alloc_rust alloc_rust_v0)
    set(mangling)
    if(variant STREQUAL alloc_rust_v0)
      set(mangling -C symbol-mangling-version=v0)
    endif()
    set(out ${NATIVEPROF_TARGETS_DIR}/${variant})
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${NP_RUSTC} ${ALLOC_RUST_FLAGS} ${mangling} ${CMAKE_CURRENT_LIST_DIR}/alloc_rust.rs
              -o ${out}
      DEPENDS ${CMAKE_CURRENT_LIST_DIR}/alloc_rust.rs
      COMMENT "rustc alloc_rust.rs (${variant})"
      VERBATIM)
    add_custom_target(${variant} DEPENDS ${out})
    add_dependencies(np_test_targets ${variant})
  endforeach()
endif()
# Go's scheduler stack (issue 12): goroutines parking through runtime.mcall, built when Go is
# installed (tools/setup.sh installs golang-go).
find_program(NP_GO go)
if(NP_GO)
  set(out ${NATIVEPROF_TARGETS_DIR}/go_scheduler)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E env GOCACHE=${CMAKE_CURRENT_BINARY_DIR}/go-cache GO111MODULE=off
            ${NP_GO} build -o ${out} ${CMAKE_CURRENT_LIST_DIR}/go_scheduler.go
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/go_scheduler.go
    COMMENT "go build go_scheduler.go"
    VERBATIM)
  add_custom_target(go_scheduler DEPENDS ${out})
  add_dependencies(np_test_targets go_scheduler)
endif()
