// Runs one recording from start to written files: spawns (or attaches to) the target, opens the
// sampling session and the counters, drains rings while the target runs, handles SIGINT/SIGTERM,
// then symbolizes and writes every output and the metadata JSON. Used by `nativeprof record`.
// Main thread; installs no signal handlers (signals are read through a signalfd).
#ifndef NATIVEPROF_TOOLS_RECORD_SESSION_H_
#define NATIVEPROF_TOOLS_RECORD_SESSION_H_

#include "tools/record_options.h"

namespace nativeprof::tools {

// Returns the process exit code: the target's status (128 + signal if it died on one) on
// success, or one of tools/exit_codes.h after printing a one-line error.
int RunRecording(const RecordOptions& options);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_RECORD_SESSION_H_
