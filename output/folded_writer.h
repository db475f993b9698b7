// Folded stacks, the FlameGraph text format that stackcollapse-perf.pl emits and flamegraph.pl,
// inferno and speedscope read: one line per distinct stack, "comm;root;...;leaf COUNT". Used by
// the dispatcher (profile_writer.h) and by report/diff; pure functions, any thread.
#ifndef NATIVEPROF_OUTPUT_FOLDED_WRITER_H_
#define NATIVEPROF_OUTPUT_FOLDED_WRITER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// Makes a name safe inside a folded line (`frame;frame;frame count`): ';' (the frame separator)
// becomes ':' and line breaks (\n, \r) become spaces; the length is unchanged. Spaces are kept:
// flamegraph.pl and inferno split the count off at the LAST space of a line, so spaces inside
// frames are harmless. The one place folded escaping is done: symbolize/ hands out plain names.
std::string EscapeFoldedFrame(absl::string_view frame);

// EscapeFoldedFrame, then an empty or blank name (spaces and tabs only) becomes "[unknown]".
std::string SanitizeFoldedName(absl::string_view name);

// The name a frame shows in folded output and flame graphs: sanitized function +
// ProfileFrameKindSuffix.
std::string FoldedFrameName(const symbolize::ProfileFrame& frame);

// Renders the profile as folded text. Stacks of different pids/tids with the same comm and frames
// merge into one line; COUNT is the number of samples; lines are sorted bytewise, each ends in
// '\n'. Stacks with zero samples are left out. Deterministic for the same input.
std::string RenderFolded(const symbolize::Profile& profile);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_FOLDED_WRITER_H_
