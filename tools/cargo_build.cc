#include "tools/cargo_build.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "nlohmann/json.hpp"
#include "tools/line_command.h"

namespace nativeprof::tools {
namespace {

bool IsExecutableFile(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

bool OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (IsExecutableFile(absl::StrCat(dir, "/", name))) return true;
  }
  return false;
}

// Whether the current directory or one of its parents holds a Cargo.toml, as cargo looks.
bool CargoTomlHereOrAbove() {
  char buf[4096];
  if (::getcwd(buf, sizeof(buf)) == nullptr) return true;  // cargo is left to say
  std::string dir = buf;
  while (true) {
    if (::access(absl::StrCat(dir == "/" ? "" : dir, "/Cargo.toml").c_str(), F_OK) == 0) {
      return true;
    }
    if (dir == "/") return false;
    const size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
}

std::string JsonString(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool HasKind(const CargoArtifact& a, absl::string_view kind) {
  for (const std::string& k : a.kinds) {
    if (k == kind) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> ParseBuildScriptLinkedPaths(absl::string_view line) {
  std::vector<std::string> paths;
  if (!absl::StrContains(line, "\"build-script-executed\"")) return paths;
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || JsonString(j, "reason") != "build-script-executed") {
    return paths;
  }
  auto linked = j.find("linked_paths");
  if (linked == j.end() || !linked->is_array()) return paths;
  for (const nlohmann::json& p : *linked) {
    if (!p.is_string()) continue;
    std::string path = p.get<std::string>();
    // "KIND=PATH" (native, dependency, crate, framework, all) or a bare PATH.
    const size_t eq = path.find('=');
    if (eq != std::string::npos && path.find('/') > eq) path = path.substr(eq + 1);
    if (!path.empty()) paths.push_back(std::move(path));
  }
  return paths;
}

std::string CargoDylibPath(const std::string& executable,
                           const std::vector<std::string>& linked_paths,
                           const std::string& inherited) {
  std::string profile_dir = DirectoryOf(executable);
  for (const char* sub : {"/deps", "/examples"}) {
    if (absl::EndsWith(profile_dir, sub)) {
      profile_dir.resize(profile_dir.size() - std::strlen(sub));
    }
  }
  std::vector<std::string> dirs;
  for (const std::string& p : linked_paths) {
    if (absl::StartsWith(p, absl::StrCat(profile_dir, "/"))) dirs.push_back(p);
  }
  dirs.push_back(absl::StrCat(profile_dir, "/deps"));
  dirs.push_back(profile_dir);
  if (!inherited.empty()) dirs.push_back(inherited);
  return absl::StrJoin(dirs, ":");
}

std::optional<CargoArtifact> ParseCargoArtifact(absl::string_view line) {
  if (!absl::StrContains(line, "\"compiler-artifact\"")) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || JsonString(j, "reason") != "compiler-artifact") {
    return std::nullopt;
  }
  CargoArtifact a;
  a.executable = JsonString(j, "executable");
  if (a.executable.empty()) return std::nullopt;
  a.manifest_path = JsonString(j, "manifest_path");
  auto target = j.find("target");
  if (target == j.end() || !target->is_object()) return std::nullopt;
  a.target_name = JsonString(*target, "name");
  auto kinds = target->find("kind");
  if (kinds != target->end() && kinds->is_array()) {
    for (const nlohmann::json& k : *kinds) {
      if (k.is_string()) a.kinds.push_back(k.get<std::string>());
    }
  }
  auto profile = j.find("profile");
  if (profile != j.end() && profile->is_object()) {
    auto debuginfo = profile->find("debuginfo");
    // Cargo has printed this as a number (0/1/2) and, since 1.71, also as a string
    // ("line-tables-only"); anything but 0 or "none" carries line tables.
    if (debuginfo != profile->end()) {
      if (debuginfo->is_number_unsigned()) {
        a.debuginfo = debuginfo->get<uint32_t>();
      } else if (debuginfo->is_string()) {
        const std::string d = debuginfo->get<std::string>();
        a.debuginfo = (d == "none" || d == "0") ? 0 : 1;
      }
    }
  }
  return a;
}

std::string FindCargo() {
  const char* from_cargo = std::getenv("CARGO");
  if (from_cargo != nullptr && *from_cargo != '\0' && IsExecutableFile(from_cargo)) {
    return from_cargo;
  }
  if (OnPath("cargo")) return "cargo";
  const char* home = std::getenv("HOME");
  if (home != nullptr) {
    std::string rustup = absl::StrCat(home, "/.cargo/bin/cargo");
    if (IsExecutableFile(rustup)) return rustup;
  }
  return std::string();
}

absl::StatusOr<std::string> LocateWorkspaceManifest(const std::string& cargo,
                                                    const std::vector<std::string>& cargo_args,
                                                    std::string* fix) {
  std::vector<std::string> argv = {cargo, "locate-project", "--workspace", "--message-format",
                                   "plain"};
  std::string manifest_given;
  for (const std::string& a : cargo_args) {
    if (absl::StartsWith(a, "--manifest-path=")) {
      argv.push_back(a);
      manifest_given = a.substr(strlen("--manifest-path="));
    }
  }
  // Where there is no manifest, cargo's own error would come before ours, saying the same twice;
  // its other errors (a Cargo.toml it cannot parse) are worth its words.
  if (!manifest_given.empty() && ::access(manifest_given.c_str(), F_OK) != 0) {
    *fix = "give --manifest-path the path of a Cargo.toml";
    return absl::NotFoundError(absl::StrCat("--manifest-path ", manifest_given, ": no such file"));
  }
  if (manifest_given.empty() && !CargoTomlHereOrAbove()) {
    *fix = "run cargo nativeprof inside a Cargo project or give --manifest-path PATH";
    return absl::NotFoundError("no Cargo.toml here or in any parent directory");
  }
  *fix = "fix what cargo said above, then run cargo nativeprof again";
  std::string manifest;
  absl::StatusOr<int> status = RunLineCommand({argv, {}, ""}, [&](absl::string_view line) {
    if (manifest.empty()) manifest = std::string(line);
  });
  if (!status.ok()) return status.status();
  if (*status != 0 || manifest.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "cargo locate-project found no workspace (exit status ", *status, ", its message above)"));
  }
  return manifest;
}

absl::StatusOr<std::string> CargoTargetDirectory(const std::string& cargo,
                                                 const std::vector<std::string>& cargo_args,
                                                 const std::string& here) {
  std::vector<std::string> argv = {cargo, "metadata", "--format-version", "1", "--no-deps"};
  for (const std::string& a : cargo_args) {
    if (absl::StartsWith(a, "--target-dir=")) {
      const std::string dir = a.substr(strlen("--target-dir="));
      return dir.empty() || dir[0] == '/' ? dir : absl::StrCat(here, "/", dir);
    }
    // What decides which workspace, and how Cargo may reach its files.
    if (absl::StartsWith(a, "--manifest-path=") || absl::StartsWith(a, "--config=") ||
        a == "--offline" || a == "--frozen" || a == "--locked") {
      argv.push_back(a);
    }
  }
  std::string dir;
  absl::StatusOr<int> status = RunLineCommand({argv, {}, ""}, [&](absl::string_view line) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && dir.empty()) dir = JsonString(j, "target_directory");
  });
  if (!status.ok()) return status.status();
  if (*status != 0 || dir.empty()) {
    return absl::NotFoundError(absl::StrCat("cargo metadata gave no target directory (exit status ",
                                            *status, ")"));
  }
  return dir;
}

std::vector<std::string> CargoBuildArgs(const CargoOptions& o) {
  // A library's unit tests are a test harness only `cargo test` builds.
  std::vector<std::string> args =
      o.kind == CargoTargetKind::kLib ? std::vector<std::string>{"test", "--no-run"}
                                      : std::vector<std::string>{"build"};
  args.insert(args.end(), {"--message-format=json-render-diagnostics",
                           absl::StrCat("--profile=", o.profile)});
  switch (o.kind) {
    case CargoTargetKind::kLib:
      args.push_back("--lib");
      break;
    case CargoTargetKind::kDefaultBin:
      args.push_back("--bins");
      break;
    case CargoTargetKind::kBin:
    case CargoTargetKind::kBench:
    case CargoTargetKind::kTest:
    case CargoTargetKind::kExample:
      args.push_back(absl::StrCat("--", CargoTargetKindName(o.kind), "=", o.target_name));
      break;
  }
  args.insert(args.end(), o.cargo_args.begin(), o.cargo_args.end());
  return args;
}

absl::StatusOr<CargoBuildResult> RunCargoBuild(const CargoBuildRequest& request) {
  LineCommand command;
  command.argv.push_back(request.cargo);
  for (std::string& a : CargoBuildArgs(*request.options)) command.argv.push_back(std::move(a));
  command.env = request.env;
  CargoBuildResult result;
  absl::StatusOr<int> status = RunLineCommand(command, [&](absl::string_view line) {
    std::optional<CargoArtifact> artifact = ParseCargoArtifact(line);
    if (artifact.has_value()) result.executables.push_back(std::move(*artifact));
    for (std::string& p : ParseBuildScriptLinkedPaths(line)) {
      result.linked_paths.push_back(std::move(p));
    }
  });
  if (!status.ok()) return status.status();
  result.exit_status = *status;
  return result;
}

absl::StatusOr<CargoArtifact> SelectArtifact(const CargoOptions& o,
                                             const std::vector<CargoArtifact>& built) {
  const char* kind = CargoTargetKindName(o.kind);
  std::vector<const CargoArtifact*> matches;
  for (const CargoArtifact& a : built) {
    if (o.kind == CargoTargetKind::kLib) {
      // The unit-test harness of a library of any crate type.
      if (!HasKind(a, "lib") && !HasKind(a, "rlib") && !HasKind(a, "dylib") &&
          !HasKind(a, "cdylib") && !HasKind(a, "staticlib") && !HasKind(a, "proc-macro")) {
        continue;
      }
    } else {
      if (!HasKind(a, kind)) continue;
      if (o.kind != CargoTargetKind::kDefaultBin && a.target_name != o.target_name) continue;
    }
    matches.push_back(&a);
  }
  if (matches.size() == 1) return *matches.front();
  if (matches.empty()) {
    std::vector<std::string> names;
    for (const CargoArtifact& a : built) {
      names.push_back(absl::StrCat(a.kinds.empty() ? "?" : a.kinds.front(), " ", a.target_name));
    }
    return absl::NotFoundError(absl::StrCat(
        "cargo built no ", kind,
        o.target_name.empty() ? std::string() : absl::StrCat(" named '", o.target_name, "'"),
        names.empty() ? std::string() : absl::StrCat(" (it built: ", absl::StrJoin(names, ", "), ")"),
        "; name the target with --bin, --bench, --test, --example or --lib"));
  }
  std::vector<std::string> names;
  for (const CargoArtifact* a : matches) names.push_back(a->target_name);
  if (o.kind == CargoTargetKind::kLib) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cargo built the unit tests of several libraries (", absl::StrJoin(names, ", "),
        "); choose the package with -p NAME"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the package has several binaries (", absl::StrJoin(names, ", "),
      "); choose one with --bin NAME"));
}

}  // namespace nativeprof::tools
