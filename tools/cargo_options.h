// The command line of `cargo nativeprof` (also `nativeprof cargo`): which Cargo target to build
// and run, the Cargo options that choose how it is built, the `record` options that pass through
// unchanged, and the program's own arguments after `--`.
#ifndef NATIVEPROF_TOOLS_CARGO_OPTIONS_H_
#define NATIVEPROF_TOOLS_CARGO_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace nativeprof::tools {

// The kind of Cargo target, named as Cargo's `--bin`/`--bench`/... flags and its JSON messages'
// `target.kind` name them.
// kLib: the package library's unit tests (`cargo test --lib`), which have no target name.
enum class CargoTargetKind { kDefaultBin, kBin, kBench, kTest, kExample, kLib };

// "bin", "bench", "test", "example", "lib"
const char* CargoTargetKindName(CargoTargetKind kind);

struct CargoOptions {
  CargoTargetKind kind = CargoTargetKind::kDefaultBin;
  std::string target_name;               // empty for kDefaultBin and kLib
  std::string profile = "release";       // --profile P (--release is the default; --dev = dev)
  std::vector<std::string> cargo_args;   // --package, --features, --manifest-path ... verbatim
  std::vector<std::string> record_args;  // every other option before `--`
  std::vector<std::string> program_args; // after `--`
  bool record_outputs_given = false;     // record_args contain -o/--output
};

// Parses the arguments after the subcommand name (argv[0] = "cargo" or "nativeprof").
// On --help returns kCancelled after printing usage to stdout; other errors are kInvalidArgument
// with a one-line message.
absl::StatusOr<CargoOptions> ParseCargoOptions(int argc, char** argv);

// Cargo's environment-variable spelling of a profile name: "release" -> "RELEASE",
// "my-prof" -> "MY_PROF" (as in CARGO_PROFILE_<NAME>_DEBUG).
std::string CargoProfileEnvName(const std::string& profile);
// The variable that sets `key` (as Cargo.toml spells it: "debug", "split-debuginfo") of profile
// `profile`: CARGO_PROFILE_RELEASE_SPLIT_DEBUGINFO.
std::string CargoProfileVariable(const std::string& profile, const std::string& key);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_CARGO_OPTIONS_H_
