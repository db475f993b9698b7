// Diagnostics through spdlog: one stderr sink shared by named loggers, one per module. Results
// never go through these loggers. Not async-signal-safe: never log from a signal handler or from
// the per-record drain loop (except SPDLOG_LOGGER_TRACE, compiled out in release builds).
#ifndef NATIVEPROF_BASE_LOGGING_H_
#define NATIVEPROF_BASE_LOGGING_H_

#include <memory>
#include <string>

#include "spdlog/spdlog.h"

namespace nativeprof {

// Sets up the stderr sink and the level: `verbosity` 0 = warn, 1 = info, 2 = debug, 3+ = trace.
// SPDLOG_LEVEL in the environment (e.g. "unwind=debug") overrides per logger. Idempotent.
void InitLogging(int verbosity);

// Returns the named logger ("sampler", "unwind", "symbolize", "output", "main"), creating it on
// first use with the shared sink. Safe to call before InitLogging (logs at warn to stderr).
std::shared_ptr<spdlog::logger> Logger(const std::string& name);

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_LOGGING_H_
