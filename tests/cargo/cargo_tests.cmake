# The Rust tests (issue 14): tests/cargo's workspace and bindings/rust, built offline against
# Debian's crates (librust-criterion-dev) with a CARGO_HOME and target directory inside the build
# tree (tests/cargo/cargo_offline.sh). The workspace is built once per ctest run by the setup
# tests of fixture `cargo_workspace`; every gtest in tests/integration/cargo/ requires it. Without
# cargo or the Debian crates the setup tests and the gtests skip, saying why.
find_program(NP_CARGO cargo HINTS /root/.cargo/bin $ENV{HOME}/.cargo/bin)
file(GLOB np_debian_criterion LIST_DIRECTORIES true /usr/share/cargo/registry/criterion-0.*)
set(NP_CARGO_SKIP_REASON "")
if(NOT NP_CARGO)
  set(NP_CARGO_SKIP_REASON "cargo not found (rustup or Debian's cargo; see tools/setup.sh)")
  set(NP_CARGO "")
elseif(NOT np_debian_criterion)
  set(NP_CARGO_SKIP_REASON
      "Debian's Criterion crate is missing: apt-get install librust-criterion-dev")
endif()
set(NP_CARGO_HOME ${CMAKE_BINARY_DIR}/cargo-home)
set(NP_CARGO_TARGET_DIR ${CMAKE_BINARY_DIR}/cargo-target)
set(NP_CARGO_OFFLINE ${CMAKE_CURRENT_LIST_DIR}/cargo_offline.sh)
set(NP_CARGO_WORKSPACE ${CMAKE_CURRENT_LIST_DIR})
set(NP_CARGO_BINDINGS ${PROJECT_SOURCE_DIR}/bindings/rust)

# Runs cargo with ARGN offline, as the fixture and the gtests do.
set(np_cargo_run bash ${NP_CARGO_OFFLINE} --cargo "${NP_CARGO}" --home ${NP_CARGO_HOME}
    --target-dir ${NP_CARGO_TARGET_DIR} --lib-dir $<TARGET_FILE_DIR:nativeprof_lib> --)
function(np_cargo_setup_test name)
  if(NP_CARGO_SKIP_REASON)
    add_test(NAME ${name} COMMAND sh -c "echo 'skipped: ${NP_CARGO_SKIP_REASON}'; exit 77")
  else()
    add_test(NAME ${name} COMMAND ${np_cargo_run} ${ARGN})
  endif()
  # A Criterion build takes ~70 s on a quiet 2-core machine.
  set_tests_properties(${name} PROPERTIES FIXTURES_SETUP cargo_workspace LABELS integration
                       TIMEOUT 900 SKIP_RETURN_CODE 77)
endfunction()
# The benches (Criterion, the nativeprof crate with its `criterion` feature) and the binaries;
# then the crate's own unit tests, which need no Criterion.
np_cargo_setup_test(cargo_build_workspace bench --no-run --workspace
                    --manifest-path ${NP_CARGO_WORKSPACE}/Cargo.toml)
np_cargo_setup_test(cargo_build_bindings test --no-run
                    --manifest-path ${NP_CARGO_BINDINGS}/Cargo.toml)
set_tests_properties(cargo_build_bindings PROPERTIES DEPENDS cargo_build_workspace)
# The workspace build runs rustc on both CPUs for about two minutes: a test beside it that
# compares CPU times (stat against perf stat, per-thread shares) measured the build instead.
set_tests_properties(cargo_build_workspace PROPERTIES RUN_SERIAL TRUE)

file(GLOB cargo_test_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/../integration/cargo/*_test.cc)
if(cargo_test_srcs)
  add_executable(cargo_integration_test ${cargo_test_srcs})
  target_link_libraries(cargo_integration_test PRIVATE np_testing GTest::gmock_main)
  target_compile_definitions(cargo_integration_test PRIVATE
    NATIVEPROF_CARGO="${NP_CARGO}"
    NATIVEPROF_CARGO_SKIP_REASON="${NP_CARGO_SKIP_REASON}"
    NATIVEPROF_CARGO_OFFLINE="${NP_CARGO_OFFLINE}"
    NATIVEPROF_CARGO_HOME="${NP_CARGO_HOME}"
    NATIVEPROF_CARGO_TARGET_DIR="${NP_CARGO_TARGET_DIR}"
    NATIVEPROF_CARGO_WORKSPACE="${NP_CARGO_WORKSPACE}"
    NATIVEPROF_CARGO_BINDINGS="${NP_CARGO_BINDINGS}"
    NATIVEPROF_LIB_DIR="$<TARGET_FILE_DIR:nativeprof_lib>")
  add_dependencies(cargo_integration_test nativeprof nativeprof_lib)
  gtest_discover_tests(cargo_integration_test PROPERTIES LABELS integration TIMEOUT 300
                       FIXTURES_REQUIRED cargo_workspace DISCOVERY_TIMEOUT 60)
endif()
