// What a Cargo build profile does to profiling: whether it has debug info (else `cargo nativeprof`
// turns line tables on for the build), whether it strips symbols (else `cargo nativeprof` keeps
// them, unless the environment chose to strip) and whether it enables LTO (warned about in one
// line). Settings come from the workspace root's Cargo.toml [profile.*] tables, the
// `inherits` chain and Cargo's built-in defaults, overridden by CARGO_PROFILE_<NAME>_<KEY>
// variables as Cargo itself does.
#ifndef NATIVEPROF_TOOLS_CARGO_PROFILE_H_
#define NATIVEPROF_TOOLS_CARGO_PROFILE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace nativeprof::tools {

// Each value as Cargo.toml spells it, normalised to a string ("true", "2", "line-tables-only",
// "symbols", "fat", ...); "" when neither the profile chain nor the environment sets it.
struct CargoProfileSettings {
  std::string name;
  std::string debug;
  std::string strip;
  std::string lto;
  // A CARGO_PROFILE_<NAME>_STRIP variable set `strip`: the user's explicit choice, which
  // `cargo nativeprof` keeps (and warns about) rather than overriding.
  bool strip_from_environment = false;
  // split-debuginfo ("off", "packed", "unpacked"; "" when unset), and whether a variable set it.
  // Split debug info leaves the DWARF of the program's own code in .dwo/.dwp files, which the
  // symbolizer does not read: `cargo nativeprof` builds with it off unless a variable chose it.
  std::string split_debuginfo;
  bool split_debuginfo_from_environment = false;

  // True when the build already carries line tables (so no override is needed).
  bool HasLineTables() const;
  // True when the profile strips symbols or debug info.
  bool Strips() const;
  // The one-line warning about strip / LTO, or "" when the profile is fine for profiling.
  std::string Warning() const;
};

// Reads profile `profile` from the Cargo.toml text `manifest` (the workspace root's).
// `getenv` looks up environment variables (std::getenv in the CLI, a map in tests).
// Errors: kInvalidArgument naming the TOML problem, or an `inherits` cycle.
absl::StatusOr<CargoProfileSettings> ReadCargoProfile(
    const std::string& manifest, const std::string& profile,
    const std::function<const char*(const std::string&)>& getenv);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_CARGO_PROFILE_H_
