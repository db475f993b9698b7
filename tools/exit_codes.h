// Exit codes shared by every nativeprof subcommand. `record` and `stat` otherwise exit with the
// profiled command's own status (128 + signal when it died on a signal), as perf does.
#ifndef NATIVEPROF_TOOLS_EXIT_CODES_H_
#define NATIVEPROF_TOOLS_EXIT_CODES_H_

namespace nativeprof::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;          // runtime failure (e.g. no such process)
inline constexpr int kExitUsage = 2;            // bad command line
inline constexpr int kExitPerfUnavailable = 3;  // perf_event_open refused or unsupported
inline constexpr int kExitOutput = 4;           // an output file cannot be written
inline constexpr int kExitBadInput = 5;         // an input profile is unreadable or malformed
inline constexpr int kExitBuildFailed = 6;      // cargo nativeprof: the build failed or made no
                                                // such target; nothing was recorded
inline constexpr int kExitNotExecutable = 126;  // the command exists but cannot be executed
inline constexpr int kExitNotFound = 127;       // the command does not exist

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_EXIT_CODES_H_
