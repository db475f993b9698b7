// Builds the target `cargo nativeprof` records: runs `cargo build --message-format=json-...` and
// takes the executable from Cargo's own JSON messages (never by globbing target/), with debug
// line tables switched on through Cargo's profile environment variables (Cargo.toml untouched).
#ifndef NATIVEPROF_TOOLS_CARGO_BUILD_H_
#define NATIVEPROF_TOOLS_CARGO_BUILD_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/cargo_options.h"

namespace nativeprof::tools {

// One executable Cargo built, from a "compiler-artifact" message.
struct CargoArtifact {
  std::string executable;        // absolute path
  std::string target_name;       // target.name
  std::vector<std::string> kinds;  // target.kind: "bin", "bench", "test", "example"
  std::string manifest_path;     // the package's Cargo.toml
  std::optional<uint32_t> debuginfo;  // profile.debuginfo as Cargo reports it (0: none);
                                      // unset when Cargo does not say
};

// The library search paths a build script asked for ("build-script-executed" message,
// `linked_paths`, without their "native="-style kind prefix); empty for other lines.
std::vector<std::string> ParseBuildScriptLinkedPaths(absl::string_view line);

// LD_LIBRARY_PATH for running `artifact` as `cargo run/bench/test` would: the build scripts'
// library paths inside the artifact's <target>/<profile> directory (Cargo adds only those), then
// <profile>/deps and <profile> themselves, then `inherited` (the current value).
std::string CargoDylibPath(const std::string& executable,
                           const std::vector<std::string>& linked_paths,
                           const std::string& inherited);

// The artifact in one line of Cargo's JSON output, or nullopt when the line is another message,
// not JSON, or an artifact without an executable (libraries, build scripts).
std::optional<CargoArtifact> ParseCargoArtifact(absl::string_view line);

// The cargo to run: $CARGO (set by Cargo for its subcommands), else `cargo` on PATH, else
// ~/.cargo/bin/cargo (rustup's default). Empty when there is none.
std::string FindCargo();

// The value given to CARGO_PROFILE_<P>_DEBUG when the profile has no debug info: 1 ("limited")
// carries line tables plus each function's linkage name, so inline frames get full paths
// (`<u64>::wrapping_mul`, not `wrapping_mul` as with line-tables-only), and every Cargo version
// accepts it.
inline constexpr char kLineTablesDebugSetting[] = "1";

// The workspace root's Cargo.toml (profiles are only read from there), from
// `cargo locate-project --workspace`. Errors: kNotFound outside a Cargo project. On an error,
// `*fix` says what the user can do about that one.
absl::StatusOr<std::string> LocateWorkspaceManifest(const std::string& cargo,
                                                    const std::vector<std::string>& cargo_args,
                                                    std::string* fix);

// The workspace's target directory: `--target-dir` among `cargo_args` (relative to `here`), else
// `cargo metadata`'s target_directory (which follows CARGO_TARGET_DIR and Cargo's configuration).
// Errors: kNotFound when cargo does not say, or the errors of RunLineCommand.
absl::StatusOr<std::string> CargoTargetDirectory(const std::string& cargo,
                                                 const std::vector<std::string>& cargo_args,
                                                 const std::string& here);

struct CargoBuildRequest {
  std::string cargo;
  const CargoOptions* options = nullptr;
  std::vector<std::pair<std::string, std::string>> env;  // e.g. CARGO_PROFILE_RELEASE_DEBUG
};

struct CargoBuildResult {
  int exit_status = 0;                  // cargo's; nonzero means the build failed
  std::vector<CargoArtifact> executables;
  std::vector<std::string> linked_paths;  // every build script's, in message order
};

// Runs the build. Errors only when cargo cannot be started; a failed build is a result.
absl::StatusOr<CargoBuildResult> RunCargoBuild(const CargoBuildRequest& request);

// The `cargo build` argument list for `options` (without the cargo path).
std::vector<std::string> CargoBuildArgs(const CargoOptions& options);

// The executable among `built` that `options` asked for. Errors (kNotFound, kInvalidArgument)
// name what was built instead and how to choose.
absl::StatusOr<CargoArtifact> SelectArtifact(const CargoOptions& options,
                                             const std::vector<CargoArtifact>& built);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_CARGO_BUILD_H_
