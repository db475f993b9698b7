// Where a run's outputs go when the place asked for cannot take them (a full disk, a directory
// that became read-only or was removed during the run): one directory per run, made on first
// use under $TMPDIR, else /tmp, else the current directory, so what was recorded is never lost
// to a failed write. A directory that cannot take an output (its disk is full too) gives way to
// one under the next place. Main thread.
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
  // WrittenPath for the summary line, which says when it could be written nowhere.
  std::string Describe(const std::string& path) const;

 private:
  // The run's fallback directory: the current one, or (with `next`, or when there is none yet)
  // one made under the next place to try; "" when no place is left.
  const std::string& Directory(bool next);
  // `dir`/`base`, or `dir`/N-`base` when an earlier output of the run was written there.
  std::string FreeName(const std::string& dir, const std::string& base) const;

  std::vector<std::string> parents_;  // the places left to try, nearest last
  bool listed_ = false;
  std::string directory_;
  std::vector<std::pair<std::string, std::string>> moved_;  // (asked for, written)
  std::vector<std::string> lost_;  // asked for, and written nowhere
};

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_OUTPUT_FALLBACK_H_
