// The input side of convert, report and diff: each reads folded profiles and fails the same way
// on one that cannot be read or is malformed (one line on stderr, exit kExitBadInput). Main
// thread only.
#ifndef NATIVEPROF_TOOLS_INPUT_PROFILE_H_
#define NATIVEPROF_TOOLS_INPUT_PROFILE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "symbolize/profile.h"

namespace nativeprof::tools {

// The folded profile in `path`; nullopt after printing "nativeprof: <problem>; <fix>" (the
// problem names the file and line, and quotes its bytes escaped) when it cannot be read or is
// not a folded profile. The caller then exits with kExitBadInput.
std::optional<symbolize::Profile> ReadInputProfile(const std::string& path, absl::string_view fix);

// The metadata `record` wrote beside `path` (PATH.json), unless a newer JSON beside another of
// the recording's outputs lists `path` and is not older than it (X.svg.json for X.folded, when
// the first -o was X.svg); null when there is none or it is not JSON (with a note on stderr:
// only what it adds is lost). An off-CPU or wall view ("X.offcpu.folded", "X.wall.folded") has none
// of its own: it shares the recording's (X.folded.json, or as above), and *view is set to
// "offcpu" or "wall" (else left empty); so do the allocation views of --alloc
// ("X.alloc.folded", ... : *view "alloc", ...). A file named like a view whose recording's
// metadata is not found gets one line on stderr: its counts are read as samples.
nlohmann::json ReadRecordMetadata(const std::string& path, std::string* view);

// The metadata JSON files ReadRecordMetadata has read so far in this process.
const std::vector<std::string>& MetadataFilesRead();

// Fails (kInvalidArgument, naming both) when one of `outputs` is, however spelled, one of
// `inputs` or a metadata JSON ReadRecordMetadata may read with one: `convert p.folded p.folded`
// replaced the recording with its own SVG; and (naming the output) when one is plainly not a
// profile (CheckNotOverwritingNonProfile: a program, a library, a script).
absl::Status CheckOutputsSpareInputs(const std::vector<std::string>& outputs,
                                     const std::vector<std::string>& inputs);

// A folded file keeps counts only: for an off-CPU or wall view (`view` from ReadRecordMetadata)
// they are microseconds, which this records in the profile (count_unit "us", weights in ns); for
// an allocation view bytes or allocations (count_unit and weight_unit both). A wall view's lines
// add up CPU and off-CPU time: where the off-CPU view of the same recording is beside `path`
// (X.offcpu.folded for X.wall.folded), each stack is split into its off-CPU part, as that file
// gives it, and the CPU rest, as record made them; without it every stack counts as CPU time.
// Fails (kInvalidArgument) on a time view of more microseconds than nanoseconds fit in 64 bits.
absl::Status MarkRecordedView(const std::string& path, const std::string& view,
                              symbolize::Profile* profile);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_INPUT_PROFILE_H_
