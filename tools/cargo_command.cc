// `cargo nativeprof` / `nativeprof cargo`: build a Cargo target with line tables, then record it
// exactly as `nativeprof record` would (same options, outputs, summary and exit status).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/text_escape.h"
#include "module/elf_image.h"
#include "spdlog/spdlog.h"
#include "tools/cargo_build.h"
#include "tools/cargo_options.h"
#include "tools/cargo_profile.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"
#include "tools/record_options.h"
#include "tools/record_session.h"

namespace nativeprof::tools {
namespace {

void PrintError(absl::string_view message) {
  std::fprintf(stderr, "nativeprof: %s\n", std::string(message).c_str());
}

std::string CurrentDirectory() {
  char buf[4096];
  return ::getcwd(buf, sizeof(buf)) != nullptr ? std::string(buf) : std::string(".");
}

// `record`'s own parser on the options the user gave, the default outputs and the command, so
// every record option means exactly what it means there.
absl::StatusOr<RecordOptions> RecordOptionsFor(const CargoOptions& o,
                                               const std::string& executable,
                                               const std::string& output_stem) {
  std::vector<std::string> args = {"record"};
  args.insert(args.end(), o.record_args.begin(), o.record_args.end());
  if (!o.record_outputs_given) {
    args.insert(args.end(), {"-o", absl::StrCat(output_stem, ".folded"), "-o",
                             absl::StrCat(output_stem, ".svg")});
  }
  args.push_back("--");
  args.push_back(executable);
  // `cargo bench` passes --bench so harnesses (libtest, Criterion) measure instead of testing.
  if (o.kind == CargoTargetKind::kBench) args.push_back("--bench");
  args.insert(args.end(), o.program_args.begin(), o.program_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return ParseRecordOptions(static_cast<int>(args.size()), argv.data());
}

// Warns when the binary Cargo produced has no symbol table although the profile did not say it
// strips (RUSTFLAGS="-C strip=symbols", a post-build step).
void WarnIfStripped(const CargoArtifact& artifact) {
  absl::StatusOr<std::unique_ptr<module::ElfImage>> elf =
      module::ElfImage::Open(artifact.executable);
  if (!elf.ok()) return;
  if ((*elf)->FindSection(".symtab", nullptr) == nullptr) {
    PrintError(absl::StrCat("warning: ", EscapeForMessage(artifact.executable),
                            " has no symbol table (RUSTFLAGS with -C strip?): frames will be "
                            "unnamed; build without stripping"));
  }
}

// Warns when Cargo says it built the binary without debug info, although cargo nativeprof asks
// for line tables (a RUSTFLAGS "-C debuginfo=0" or a profile setting that wins over ours).
void WarnIfNoDebugInfo(const CargoArtifact& artifact) {
  if (artifact.debuginfo != std::optional<uint32_t>(0)) return;
  PrintError(absl::StrCat("warning: Cargo built ", EscapeForMessage(artifact.executable),
                          " without debug info: inlined functions and source lines will be "
                          "missing (names still come from the symbol table); remove the "
                          "setting that turns debuginfo off"));
}

}  // namespace

int RunCargoCommand(int argc, char** argv) {
  absl::StatusOr<CargoOptions> options = ParseCargoOptions(argc, argv);
  if (!options.ok()) {
    return PrintCliError(CliStep::kParseOptions, options.status(), {},
                         "see 'cargo nativeprof --help'");
  }
  // Record options are checked before anything is built, so a typo costs no compile.
  if (absl::StatusOr<RecordOptions> check = RecordOptionsFor(*options, "program", "program");
      !check.ok()) {
    return PrintCliError(CliStep::kParseOptions, check.status());
  } else {
    InitLogging(check->verbosity);
  }

  const std::string cargo = FindCargo();
  if (cargo.empty()) {
    PrintError("cargo not found on PATH or in ~/.cargo/bin; install Rust (rustup, or Debian's "
               "cargo package)");
    return kExitNotFound;
  }
  std::string fix;
  absl::StatusOr<std::string> manifest = LocateWorkspaceManifest(cargo, options->cargo_args, &fix);
  if (!manifest.ok()) {
    return PrintCliError(CliStep::kBuild, manifest.status(), {}, fix);
  }

  CargoBuildRequest request;
  request.cargo = cargo;
  request.options = &*options;
  absl::StatusOr<std::string> manifest_text = ReadSmallFile(*manifest, size_t{16} << 20);
  absl::StatusOr<CargoProfileSettings> profile =
      manifest_text.ok() ? ReadCargoProfile(*manifest_text, options->profile,
                                            [](const std::string& name) {
                                              return std::getenv(name.c_str());
                                            })
                         : absl::StatusOr<CargoProfileSettings>(manifest_text.status());
  bool warned_strip = false;
  if (!profile.ok()) {
    // Cargo reports a broken Cargo.toml itself; only the strip/LTO check is lost.
    spdlog::info("profile settings not read: {}", profile.status().message());
  } else {
    if (!profile->HasLineTables()) {
      const std::string debug_env = CargoProfileVariable(options->profile, "debug");
      request.env.emplace_back(debug_env, kLineTablesDebugSetting);
      spdlog::info("building with {}={}", debug_env, kLineTablesDebugSetting);
    }
    // Stripping changes no code, only what the binary keeps: a profile of a stripped binary has
    // no names. Unless the environment asked for it, the build keeps its symbols (setting
    // Cargo's default explicitly changes no fingerprint, so nothing is rebuilt for it). Cargo's
    // config files can set strip too: the environment overrides them as well.
    if (!profile->strip_from_environment) {
      const std::string strip_env = CargoProfileVariable(options->profile, "strip");
      request.env.emplace_back(strip_env, "none");
      if (profile->Strips()) {
        spdlog::info("profile '{}' sets strip = \"{}\": building with {}=none", profile->name,
                     profile->strip, strip_env);
      }
      profile->strip = "none";
    }
    // Split debug info (.dwo files, or a .dwp beside the binary) takes the DWARF of the
    // program's own code out of the binary: its inline frames and lines would be lost. Turned
    // off where Cargo.toml turns it on; not set otherwise, since an explicit "off" (Linux's
    // default) changes rustc's flags, and so the fingerprint: every build in between would
    // rebuild everything.
    if (!profile->split_debuginfo_from_environment && !profile->split_debuginfo.empty() &&
        profile->split_debuginfo != "off") {
      const std::string split_env = CargoProfileVariable(options->profile, "split-debuginfo");
      request.env.emplace_back(split_env, "off");
      spdlog::info("profile '{}' sets split-debuginfo = \"{}\": building with {}=off",
                   profile->name, profile->split_debuginfo, split_env);
      profile->split_debuginfo = "off";
    }
    const std::string warning = profile->Warning();
    if (!warning.empty()) PrintError(absl::StrCat("warning: ", warning));
    // Only a strip the warning named makes the check of the built binary say it again.
    warned_strip = profile->Strips();
  }

  absl::StatusOr<CargoBuildResult> build = RunCargoBuild(request);
  if (!build.ok()) return PrintCliError(CliStep::kExecCommand, build.status());
  if (build->exit_status != 0) {
    PrintError(absl::StrCat("cargo build failed (exit status ", build->exit_status,
                            "; its messages are above); nothing was recorded"));
    return kExitBuildFailed;
  }
  absl::StatusOr<CargoArtifact> artifact = SelectArtifact(*options, build->executables);
  if (!artifact.ok()) return PrintCliError(CliStep::kBuild, artifact.status());
  if (!warned_strip) WarnIfStripped(*artifact);
  WarnIfNoDebugInfo(*artifact);

  const std::string here = CurrentDirectory();
  absl::StatusOr<RecordOptions> record = RecordOptionsFor(
      *options, artifact->executable, absl::StrCat(here, "/nativeprof-", artifact->target_name));
  if (!record.ok()) return PrintCliError(CliStep::kParseOptions, record.status());
  if (options->kind == CargoTargetKind::kBench || options->kind == CargoTargetKind::kTest ||
      options->kind == CargoTargetKind::kLib) {
    record->command_directory = DirectoryOf(artifact->manifest_path);
    // Relative output paths keep meaning "from where cargo nativeprof was started".
    for (RecordOutput& out : record->outputs) {
      if (!out.path.empty() && out.path[0] != '/') out.path = absl::StrCat(here, "/", out.path);
    }
  }
  // Libraries that build scripts put in the target dir (a -sys crate's, nativeprof's own for the
  // Criterion hook) load as under `cargo run`/`cargo bench`; the child inherits our environment.
  const char* inherited = std::getenv("LD_LIBRARY_PATH");
  const std::string dylib_path = CargoDylibPath(artifact->executable, build->linked_paths,
                                                inherited != nullptr ? inherited : "");
  ::setenv("LD_LIBRARY_PATH", dylib_path.c_str(), 1);
  spdlog::info("recording {} with LD_LIBRARY_PATH={}", artifact->executable, dylib_path);
  if (options->kind == CargoTargetKind::kBench && std::getenv("CARGO_TARGET_DIR") == nullptr) {
    // Criterion finds its output directory in CARGO_TARGET_DIR, or else by running
    // `$CARGO metadata`: that cargo's start-up, manifest parsing and allocations (more than the
    // benchmark's own peak heap) were recorded as part of the benchmark.
    absl::StatusOr<std::string> target_dir =
        CargoTargetDirectory(cargo, options->cargo_args, here);
    if (target_dir.ok()) {
      ::setenv("CARGO_TARGET_DIR", target_dir->c_str(), 1);
      spdlog::info("recording with CARGO_TARGET_DIR={}", *target_dir);
    } else {
      spdlog::info("CARGO_TARGET_DIR not set: {}", target_dir.status().message());
    }
  }
  return RunRecording(*record);
}

}  // namespace nativeprof::tools
