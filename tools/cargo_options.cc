#include "tools/cargo_options.h"

#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/text_escape.h"

namespace nativeprof::tools {
namespace {

constexpr char kCargoUsage[] = R"(usage: cargo nativeprof [TARGET] [CARGO OPTIONS] [RECORD OPTIONS] [-- ARGS]
       nativeprof cargo  (the same)

Builds a Cargo target (release profile, debug line tables switched on for this build) and records
it with 'nativeprof record', writing nativeprof-<target>.folded and .svg in the current directory
unless -o is given, and printing the counter table.

TARGET (default: the package's only binary)
  --bin NAME | --bench NAME | --test NAME | --example NAME | --lib
      --bench runs the harness with --bench, as 'cargo bench' does; --lib the library's unit
      tests (built as 'cargo test --lib' builds them); benches and tests run in their package
      directory, as Cargo runs them.

CARGO OPTIONS (passed to 'cargo build')
  --profile P            build profile (default release); --release, --dev
  -p, --package NAME     package of a workspace
  --features LIST        --all-features, --no-default-features (-F is record's frequency)
  --manifest-path PATH   --target-dir DIR, --locked, --offline, --frozen

RECORD OPTIONS: everything 'nativeprof record --help' lists except -p/--pid (see docs/rust.md).
ARGS go to the program, e.g. a Criterion filter: cargo nativeprof --bench parse -- parse/json
)";

struct ValueOption {
  const char* name;
  const char* short_name;  // nullptr when there is none
};

// Cargo options with a value, passed through to `cargo build`.
constexpr ValueOption kCargoValueOptions[] = {
    {"--package", "-p"}, {"--features", nullptr}, {"--manifest-path", nullptr},
    {"--target-dir", nullptr}, {"--target", nullptr}, {"--config", nullptr}, {"--jobs", "-j"},
};
constexpr const char* kCargoFlags[] = {"--all-features", "--no-default-features", "--locked",
                                       "--offline", "--frozen"};

// Matches `--name VALUE`, `--name=VALUE` or `-X VALUE`; advances *i past the value.
absl::StatusOr<bool> TakeValue(int argc, char** argv, int* i, const char* name,
                               const char* short_name, std::string* value) {
  const std::string arg = argv[*i];
  const std::string eq = absl::StrCat(name, "=");
  if (absl::StartsWith(arg, eq)) {
    *value = arg.substr(eq.size());
    return true;
  }
  if (arg != name && (short_name == nullptr || arg != short_name)) return false;
  if (*i + 1 >= argc) {
    return absl::InvalidArgumentError(absl::StrCat(arg, " needs a value"));
  }
  *value = argv[++*i];
  return true;
}

}  // namespace

const char* CargoTargetKindName(CargoTargetKind kind) {
  switch (kind) {
    case CargoTargetKind::kDefaultBin:
    case CargoTargetKind::kBin:
      return "bin";
    case CargoTargetKind::kBench:
      return "bench";
    case CargoTargetKind::kTest:
      return "test";
    case CargoTargetKind::kExample:
      return "example";
    case CargoTargetKind::kLib:
      return "lib";
  }
  return "bin";
}

std::string CargoProfileEnvName(const std::string& profile) {
  std::string name = absl::AsciiStrToUpper(profile);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

std::string CargoProfileVariable(const std::string& profile, const std::string& key) {
  return absl::StrCat("CARGO_PROFILE_", CargoProfileEnvName(profile), "_",
                      CargoProfileEnvName(key));
}

absl::StatusOr<CargoOptions> ParseCargoOptions(int argc, char** argv) {
  CargoOptions o;
  bool target_given = false;
  static constexpr struct {
    const char* flag;
    CargoTargetKind kind;
  } kTargets[] = {{"--bin", CargoTargetKind::kBin},
                  {"--bench", CargoTargetKind::kBench},
                  {"--test", CargoTargetKind::kTest},
                  {"--example", CargoTargetKind::kExample}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (int j = i + 1; j < argc; ++j) o.program_args.emplace_back(argv[j]);
      break;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(kCargoUsage, stdout);
      return absl::CancelledError("help");
    }
    std::string value;
    bool matched = false;
    auto second_target = [&arg] {
      return absl::InvalidArgumentError(absl::StrCat(
          "more than one target given ('", EscapeForMessage(arg),
          "' after another); cargo nativeprof records one target at a time"));
    };
    if (arg == "--lib") {
      if (target_given) return second_target();
      o.kind = CargoTargetKind::kLib;
      target_given = true;
      continue;
    }
    for (const auto& t : kTargets) {
      absl::StatusOr<bool> took = TakeValue(argc, argv, &i, t.flag, nullptr, &value);
      if (!took.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(t.flag, " needs a target name, e.g. ", t.flag, " NAME"));
      }
      if (!*took) continue;
      if (target_given) return second_target();
      if (value.empty() || value[0] == '-') {
        return absl::InvalidArgumentError(
            absl::StrCat(t.flag, " needs a target name, e.g. ", t.flag, " NAME"));
      }
      o.kind = t.kind;
      o.target_name = value;
      target_given = true;
      matched = true;
      break;
    }
    if (matched) continue;
    absl::StatusOr<bool> took = TakeValue(argc, argv, &i, "--profile", nullptr, &value);
    if (!took.ok()) return took.status();
    if (*took) {
      if (value.empty()) return absl::InvalidArgumentError("--profile needs a profile name");
      o.profile = value;
      continue;
    }
    if (arg == "--release" || arg == "-r") {
      o.profile = "release";
      continue;
    }
    if (arg == "--dev") {
      o.profile = "dev";
      continue;
    }
    for (const ValueOption& v : kCargoValueOptions) {
      took = TakeValue(argc, argv, &i, v.name, v.short_name, &value);
      if (!took.ok()) return took.status();
      if (*took) {
        o.cargo_args.push_back(absl::StrCat(v.name, "=", value));
        matched = true;
        break;
      }
    }
    if (matched) continue;
    for (const char* flag : kCargoFlags) {
      if (arg == flag) {
        o.cargo_args.push_back(arg);
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (arg == "--pid" || absl::StartsWith(arg, "--pid=")) {
      return absl::InvalidArgumentError(
          "--pid attaches to a running process, which cargo nativeprof does not build; use "
          "'nativeprof record -p PID'");
    }
    if (arg == "-o" || arg == "--output" || absl::StartsWith(arg, "--output=") ||
        (absl::StartsWith(arg, "-o") && arg.size() > 2)) {
      o.record_outputs_given = true;
    }
    o.record_args.push_back(arg);
  }
  return o;
}

}  // namespace nativeprof::tools
