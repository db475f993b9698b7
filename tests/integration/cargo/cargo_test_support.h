// Running cargo from the Rust integration tests: offline, against Debian's crates, with the build
// tree's CARGO_HOME and target directory (tests/cargo/cargo_offline.sh), after the
// `cargo_workspace` ctest fixture built tests/cargo and bindings/rust once
// (tests/cargo/cargo_tests.cmake). Header-only; every test of this directory includes it.
#ifndef NATIVEPROF_TESTS_INTEGRATION_CARGO_CARGO_TEST_SUPPORT_H_
#define NATIVEPROF_TESTS_INTEGRATION_CARGO_CARGO_TEST_SUPPORT_H_

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {

// The Cargo workspace of the tests and the Rust crate, in the source tree.
inline const char* CargoWorkspaceManifest() { return NATIVEPROF_CARGO_WORKSPACE "/Cargo.toml"; }
inline const char* RustBindingsManifest() { return NATIVEPROF_CARGO_BINDINGS "/Cargo.toml"; }
// CARGO_TARGET_DIR of every cargo run here (Criterion writes under <it>/criterion).
inline std::string CargoTargetDir() { return NATIVEPROF_CARGO_TARGET_DIR; }

// `cargo ARGS...` through cargo_offline.sh, with NATIVEPROF_LIB_DIR at the build's library.
inline CommandResult RunCargo(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"bash",
                                    NATIVEPROF_CARGO_OFFLINE,
                                    "--cargo",
                                    NATIVEPROF_CARGO,
                                    "--home",
                                    NATIVEPROF_CARGO_HOME,
                                    "--target-dir",
                                    NATIVEPROF_CARGO_TARGET_DIR,
                                    "--lib-dir",
                                    NATIVEPROF_LIB_DIR,
                                    "--"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

}  // namespace nativeprof::testing

// Skips the test when cargo or Debian's crates are missing (the reason CMake found).
#define NP_SKIP_IF_NO_CARGO()                                                  \
  do {                                                                         \
    if (std::string(NATIVEPROF_CARGO_SKIP_REASON) != "") {                     \
      GTEST_SKIP() << NATIVEPROF_CARGO_SKIP_REASON;                            \
    }                                                                          \
  } while (0)

#endif  // NATIVEPROF_TESTS_INTEGRATION_CARGO_CARGO_TEST_SUPPORT_H_
