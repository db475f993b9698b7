// Reads folded stacks ("comm;root;...;leaf COUNT" per line) back into a symbolize::Profile, for
// `convert`, `report` and `diff`. Only names survive the folded format: frames get a function and
// a ProfileFrameKind (from the _[k] / _[i] / _[j] suffix), the first element becomes the thread
// name. Pure parsing plus one file read; any thread.
#ifndef NATIVEPROF_OUTPUT_FOLDED_READER_H_
#define NATIVEPROF_OUTPUT_FOLDED_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// The largest folded file ReadFoldedFile reads. Each frame takes at least one byte (its ';'), so
// this also keeps frame and stack counts within the writers' 32-bit indexes.
inline constexpr size_t kMaxFoldedFileBytes = size_t{1} << 30;
// The most all counts of a folded file may add up to: pprof's values are signed 64-bit.
inline constexpr uint64_t kMaxFoldedTotal = uint64_t{INT64_MAX};

// Parses folded text. Blank lines are skipped; the count is split off at the last space or tab
// and must be a non-negative integer; identical stacks on several lines are summed. The result has
// weight == samples, weight_unit "samples", an empty event, no timeline, and stacks in first-seen
// order.
// Errors: kInvalidArgument "line N: <problem>", also when the counts add up to more than 2^64 - 1
// (every total a report or writer computes then fits in 64 bits).
absl::StatusOr<symbolize::Profile> ParseFolded(absl::string_view text);

// Reads and parses a folded file. Errors: kNotFound / kPermissionDenied (with the path) when it
// cannot be read, kResourceExhausted when it is larger than kMaxFoldedFileBytes,
// kInvalidArgument "<path>:N: <problem>" when it is malformed.
absl::StatusOr<symbolize::Profile> ReadFoldedFile(const std::string& path);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_FOLDED_READER_H_
