// The nativeprof CLI: dispatches to one subcommand; nothing else lives here.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tools/commands.h"
#include "tools/exit_codes.h"
#include "tools/input_profile.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"record", nativeprof::tools::RunRecordCommand, "run a command and sample its stacks"},
    {"convert", nativeprof::tools::RunConvertCommand, "convert a folded profile to svg/pprof/speedscope"},
    {"report", nativeprof::tools::RunReportCommand, "top functions with confidence intervals, call tree"},
    {"diff", nativeprof::tools::RunDiffCommand, "compare two profiles, significant changes, diff SVG"},
    {"stat", nativeprof::tools::RunStatCommand, "run a command and count events (perf stat)"},
    {"demangle", nativeprof::tools::RunDemangleCommand, "demangle C++/Rust symbol names (like c++filt)"},
    {"cargo", nativeprof::tools::RunCargoCommand, "build a Cargo target with line tables and record it"},
};

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: nativeprof <command> [options]\n\ncommands:\n");
  for (const Subcommand& c : kSubcommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'nativeprof <command> --help' describes a command's options.\n");
}

// True when run as `cargo-nativeprof`: Cargo runs subcommands as `cargo-NAME NAME ARGS...`.
bool RunAsCargoSubcommand(const char* argv0) {
  const char* slash = std::strrchr(argv0, '/');
  return std::strcmp(slash != nullptr ? slash + 1 : argv0, "cargo-nativeprof") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (RunAsCargoSubcommand(argv[0])) {
    // `cargo nativeprof ARGS` arrives as argv = {cargo-nativeprof, nativeprof, ARGS}; run
    // directly it is {cargo-nativeprof, ARGS}.
    if (argc >= 2 && std::strcmp(argv[1], "nativeprof") == 0) {
      return nativeprof::tools::RunCargoCommand(argc - 1, argv + 1);
    }
    return nativeprof::tools::RunCargoCommand(argc, argv);
  }
  if (argc < 2) {
    PrintUsage(stderr);
    return nativeprof::tools::kExitUsage;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-V") == 0) {
    std::printf("nativeprof %s\n", NATIVEPROF_VERSION_STRING);
    return nativeprof::tools::kExitOk;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintUsage(stdout);
    return nativeprof::tools::kExitOk;
  }
  for (const Subcommand& c : kSubcommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const nlohmann::json::exception& e) {
      // Valid JSON with a field of another type than `record` writes (an edited or foreign
      // X.folded.json beside an input): the metadata's readers take it as it is written.
      const std::vector<std::string>& read = nativeprof::tools::MetadataFilesRead();
      const std::string which =
          read.empty() ? std::string("the metadata (.json) beside an input")
          : read.size() == 1
              ? absl::StrCat("the metadata ", read[0])
              : absl::StrCat("one of the metadata files ", absl::StrJoin(read, ", "));
      std::fprintf(stderr,
                   "nativeprof: %s has a field of an unexpected type (%s); remove that .json "
                   "file or record again\n",
                   which.c_str(), e.what());
      return nativeprof::tools::kExitBadInput;
    }
  }
  std::fprintf(stderr, "nativeprof: unknown command '%s'; run 'nativeprof --help' for the list\n",
               argv[1]);
  return nativeprof::tools::kExitUsage;
}
