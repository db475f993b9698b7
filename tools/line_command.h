// Runs a helper program (cargo) to completion and hands its stdout to the caller line by line;
// its stderr goes straight to ours, so the user sees its progress and errors as they happen.
#ifndef NATIVEPROF_TOOLS_LINE_COMMAND_H_
#define NATIVEPROF_TOOLS_LINE_COMMAND_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof::tools {

struct LineCommand {
  std::vector<std::string> argv;                            // argv[0] searched on PATH
  std::vector<std::pair<std::string, std::string>> env;     // set in the child only
  std::string cwd;                                          // empty: ours
};

// Runs `command`, calling `on_line` with each stdout line (without its newline; a line longer than
// `max_line_bytes` is cut there, the rest of it skipped) and returns its exit status (128 + signal
// when it died on one). Errors: kNotFound when argv[0] cannot be found or executed, or the
// errno of pipe/fork.
absl::StatusOr<int> RunLineCommand(const LineCommand& command,
                                   const std::function<void(absl::string_view)>& on_line,
                                   size_t max_line_bytes = 16 << 20);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_LINE_COMMAND_H_
