// How every subcommand ends on a failed absl::Status: one line on stderr,
// "nativeprof: [WHAT: ]MESSAGE[; FIX]", and an exit code of tools/exit_codes.h. The one table from
// (what failed, canonical code) to exit code lives in cli_error.cc. Main thread.
#ifndef NATIVEPROF_TOOLS_CLI_ERROR_H_
#define NATIVEPROF_TOOLS_CLI_ERROR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace nativeprof::tools {

// What the failed call was doing. Most steps have one exit code whatever the status says; for the
// others the canonical code decides, because the same code means different things to different
// calls (kNotFound is a missing sampling event to record, a missing process to stat -p).
enum class CliStep : uint8_t {
  kParseOptions,  // the command line: kCancelled means --help was printed (exit 0, no line),
                  // anything else is a usage error (2)
  kOpenEvents,    // opening perf events (and their rings) on a target: kInvalidArgument 2 (a
                  // request such as -F the kernel rejects), kUnavailable 1 (the target went
                  // away), anything else 3: refused (paranoid, CAP_PERFMON), unsupported,
                  // or over a limit (RLIMIT_NOFILE, perf_event_mlock_kb)
  kOpenCounters,  // as kOpenEvents, for counting events (stat): an unsupported counter is data,
                  // not an error, so kNotFound can only be the missing process of -p (1)
  kExecCommand,   // exec of the command to profile: kNotFound 127, anything else 126
  kRun,           // anything else while running (spawn, signalfd, reading counters): 1
  kReadInput,     // an input profile cannot be read or is malformed: 5
  kWriteOutput,   // an output file cannot be written: 4
  kBuild,         // cargo nativeprof: the build failed or made no such target: 6
};

struct CliError {
  std::string message;  // one line without the "nativeprof: " prefix; empty after --help
  int exit_code = 0;
};

// The line and exit code for a failed `status` at `step`: `what` (when not empty) and ": " before
// the status message, "; " and `fix` (when not empty) after it. The message is used as the call
// that failed made it: ErrnoError already carries the errno text once.
CliError ToCliError(CliStep step, const absl::Status& status, absl::string_view what = {},
                    absl::string_view fix = {});

// Prints ToCliError's line to stderr (nothing when it is empty) and returns its exit code.
int PrintCliError(CliStep step, const absl::Status& status, absl::string_view what = {},
                  absl::string_view fix = {});

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_CLI_ERROR_H_
