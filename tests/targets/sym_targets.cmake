# Symbolizer test programs (included from targets.cmake): sym_prog as PIE, non-PIE, -O0 and linked
# to a shared library; stripped / debug-file / MiniDebugInfo / compressed-DWARF variants derived
# from it at build time; Rust programs with legacy and v0 mangling when rustc is installed.
set(SYM_FLAGS -O2 -g -fno-omit-frame-pointer)
np_test_target(sym_prog SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc FLAGS ${SYM_FLAGS})
np_test_target(sym_prog_nopie SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc
               FLAGS ${SYM_FLAGS} -fno-pie LINK -no-pie)
set_target_properties(sym_prog_nopie PROPERTIES POSITION_INDEPENDENT_CODE OFF)
np_test_target(sym_prog_O0 SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc
               FLAGS -O0 -g -fno-omit-frame-pointer)
# Without the flags in DW_AT_producer (clang's default): told by where the variables live.
np_test_target(sym_prog_O0_silent SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc
               FLAGS -O0 -g -gno-record-gcc-switches -fno-omit-frame-pointer)
np_test_target(sym_prog_O2_silent SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc
               FLAGS -O2 -g -gno-record-gcc-switches -fno-omit-frame-pointer)
# Split DWARF (-gsplit-dwarf): the functions' DIEs in a .dwo file beside the object, found
# through the skeleton unit's compilation directory; DWARF 5's form and GNU's DWARF 4 one.
np_test_target(sym_prog_split SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc
               FLAGS ${SYM_FLAGS} -gsplit-dwarf)
np_test_target(sym_prog_split4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc
               FLAGS ${SYM_FLAGS} -gdwarf-4 -gsplit-dwarf)

add_library(sym_lib SHARED ${CMAKE_CURRENT_LIST_DIR}/sym_lib.cc)
target_compile_options(sym_lib PRIVATE ${SYM_FLAGS})
set_target_properties(sym_lib PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NATIVEPROF_TARGETS_DIR})
np_test_target(sym_prog_shared SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_prog.cc
               FLAGS ${SYM_FLAGS} -DSYM_WITH_LIB LINK sym_lib)

set(SYM_VARIANTS_STAMP ${NATIVEPROF_TARGETS_DIR}/sym_variants.stamp)
add_custom_command(
  OUTPUT ${SYM_VARIANTS_STAMP}
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sym_make_variants.sh $<TARGET_FILE:sym_prog>
          ${NATIVEPROF_TARGETS_DIR}
  DEPENDS sym_prog ${CMAKE_CURRENT_LIST_DIR}/sym_make_variants.sh
  COMMENT "Deriving stripped/debug-file/MiniDebugInfo variants of sym_prog"
  VERBATIM)
add_custom_target(sym_variants DEPENDS ${SYM_VARIANTS_STAMP})
add_dependencies(np_test_targets sym_variants)

find_program(NP_RUSTC rustc HINTS /root/.cargo/bin $ENV{HOME}/.cargo/bin)
if(NP_RUSTC)
  set(SYM_RUST_FLAGS -C opt-level=2 -g -C force-frame-pointers=yes -C panic=abort)
  foreach(mangling legacy v0)
    set(out ${NATIVEPROF_TARGETS_DIR}/sym_rust_${mangling})
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E env RUSTC_BOOTSTRAP=1 ${NP_RUSTC} ${SYM_RUST_FLAGS}
              -Z unstable-options -C symbol-mangling-version=${mangling}
              ${CMAKE_CURRENT_LIST_DIR}/sym_rust.rs -o ${out}
      DEPENDS ${CMAKE_CURRENT_LIST_DIR}/sym_rust.rs
      COMMENT "rustc sym_rust.rs (${mangling} mangling)"
      VERBATIM)
    add_custom_target(sym_rust_${mangling} DEPENDS ${out})
    add_dependencies(np_test_targets sym_rust_${mangling})
  endforeach()
  # A debug build (cargo build's profile), which the symbolizer must tell from the two above.
  set(out ${NATIVEPROF_TARGETS_DIR}/sym_rust_O0)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${NP_RUSTC} -C opt-level=0 -g -C panic=abort ${CMAKE_CURRENT_LIST_DIR}/sym_rust.rs
            -o ${out}
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/sym_rust.rs
    COMMENT "rustc sym_rust.rs (debug build)"
    VERBATIM)
  add_custom_target(sym_rust_O0 DEPENDS ${out})
  add_dependencies(np_test_targets sym_rust_O0)
endif()

np_test_target(sym_jit SOURCES ${CMAKE_CURRENT_LIST_DIR}/sym_jit.c FLAGS -O1 -fno-omit-frame-pointer)
