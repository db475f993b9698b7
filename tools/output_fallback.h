// Where a run's outputs go when the place asked for cannot take them (a full disk, a directory
// that became read-only or was removed during the run): one directory per run, made on first
// use under $TMPDIR (else /tmp), else under the current directory, so what was recorded is never
// lost to a failed write. Main thread.
#ifndef NATIVEPROF_TOOLS_OUTPUT_FALLBACK_H_
#define NATIVEPROF_TOOLS_OUTPUT_FALLBACK_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace nativeprof::tools {

class OutputFallback {
 public:
  // Calls write(path). When that fails, prints one line naming the failure and, after write
  // succeeded on the file of the same name in the fallback directory, where the output went
  // instead; `exit_code` then becomes the output-error code. Returns the path written ("" when
  // neither could be).
  std::string Write(const std::string& path,
                    absl::FunctionRef<absl::Status(const std::string&)> write, int* exit_code);

  // Where the output asked for as `path` was written: `path`, or its fallback.
  const std::string& WrittenPath(const std::string& path) const;

 private:
  // The run's fallback directory, made on first call; "" when none could be made.
  const std::string& Directory();

  std::string directory_;
  bool tried_ = false;
  std::vector<std::pair<std::string, std::string>> moved_;  // (asked for, written)
};

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_OUTPUT_FALLBACK_H_
