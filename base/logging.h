// Diagnostics through spdlog: one stderr sink shared by named loggers, one per module. Results
// never go through these loggers. Not async-signal-safe: never log from a signal handler or from
// the per-record drain loop (except SPDLOG_LOGGER_TRACE, compiled out in release builds).
#ifndef NATIVEPROF_BASE_LOGGING_H_
#define NATIVEPROF_BASE_LOGGING_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "spdlog/spdlog.h"

namespace nativeprof {

// Sets up the stderr sink and the level: `verbosity` 0 = warn, 1 = info, 2 = debug, 3+ = trace.
// SPDLOG_LEVEL in the environment (e.g. "unwind=debug") overrides per logger. Idempotent.
void InitLogging(int verbosity);

// Returns the named logger ("sampler", "unwind", "symbolize", "output", "main"), creating it on
// first use with the shared sink. Safe to call before InitLogging (logs at warn to stderr).
std::shared_ptr<spdlog::logger> Logger(const std::string& name);

}  // namespace nativeprof

// Debian's Abseil has its own string_view type (not std::string_view), which fmt cannot format
// on its own; these let log lines take absl::string_view and absl::Status directly.
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  template <typename Ctx>
  auto format(absl::string_view s, Ctx& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(s.data(), s.size()), ctx);
  }
};
template <>
struct fmt::formatter<absl::Status> : fmt::formatter<fmt::string_view> {
  template <typename Ctx>
  auto format(const absl::Status& s, Ctx& ctx) const {
    std::string text = s.ToString();
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(text), ctx);
  }
};

#endif  // NATIVEPROF_BASE_LOGGING_H_
