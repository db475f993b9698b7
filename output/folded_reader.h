// Reads folded stacks ("comm;root;...;leaf COUNT" per line) back into a symbolize::Profile, for
// `convert`, `report` and `diff`. Only names survive the folded format: frames get a function and
// a FrameKind (from the _[k] / _[i] / _[j] suffix), the first element becomes the thread name.
// Pure parsing plus one file read; any thread.
#ifndef NATIVEPROF_OUTPUT_FOLDED_READER_H_
#define NATIVEPROF_OUTPUT_FOLDED_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// Parses folded text. Blank lines are skipped; the count is split off at the last space or tab
// and must be a non-negative integer; identical stacks on several lines are summed. The result has
// weight == samples, weight_unit "samples", an empty event, no timeline, and stacks in first-seen
// order.
// Errors: kInvalidArgument "line N: <problem>".
absl::StatusOr<symbolize::Profile> ParseFolded(absl::string_view text);

// Reads and parses a folded file. Errors: kNotFound / kPermissionDenied (with the path) when it
// cannot be read, kInvalidArgument "<path>:N: <problem>" when it is malformed.
absl::StatusOr<symbolize::Profile> ReadFoldedFile(const std::string& path);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_FOLDED_READER_H_
