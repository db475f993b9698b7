#include "tools/cli_error.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "tools/exit_codes.h"

namespace nativeprof::tools {
namespace {

int ExitCodeFor(CliStep step, absl::StatusCode code) {
  switch (step) {
    case CliStep::kParseOptions:
      return code == absl::StatusCode::kCancelled ? kExitOk : kExitUsage;
    case CliStep::kOpenCounters:
      if (code == absl::StatusCode::kNotFound) return kExitFailure;  // no such process
      [[fallthrough]];
    case CliStep::kOpenEvents:
      // docs/record.md: 2 is a bad command line, 3 "perf_event_open refused or unsupported".
      if (code == absl::StatusCode::kInvalidArgument) return kExitUsage;
      if (code == absl::StatusCode::kUnavailable) return kExitFailure;  // the target exited
      return kExitPerfUnavailable;
    case CliStep::kExecCommand:
      return code == absl::StatusCode::kNotFound ? kExitNotFound : kExitNotExecutable;
    case CliStep::kRun:
      return kExitFailure;
    case CliStep::kReadInput:
      return kExitBadInput;
    case CliStep::kWriteOutput:
      return kExitOutput;
    case CliStep::kBuild:
      return kExitBuildFailed;
  }
  return kExitFailure;
}

}  // namespace

CliError ToCliError(CliStep step, const absl::Status& status, absl::string_view what,
                    absl::string_view fix) {
  CliError e;
  e.exit_code = ExitCodeFor(step, status.code());
  // --help printed the usage already; there is nothing wrong to report.
  if (step == CliStep::kParseOptions && absl::IsCancelled(status)) return e;
  e.message = absl::StrCat(what, what.empty() ? "" : ": ", status.message(),
                           fix.empty() ? "" : "; ", fix);
  return e;
}

int PrintCliError(CliStep step, const absl::Status& status, absl::string_view what,
                  absl::string_view fix) {
  const CliError e = ToCliError(step, status, what, fix);
  if (!e.message.empty()) std::fprintf(stderr, "nativeprof: %s\n", e.message.c_str());
  return e.exit_code;
}

}  // namespace nativeprof::tools
