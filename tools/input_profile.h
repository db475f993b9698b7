// The input side of convert, report and diff: each reads folded profiles and fails the same way
// on one that cannot be read or is malformed (one line on stderr, exit kExitBadInput). Main
// thread only.
#ifndef NATIVEPROF_TOOLS_INPUT_PROFILE_H_
#define NATIVEPROF_TOOLS_INPUT_PROFILE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "symbolize/profile.h"

namespace nativeprof::tools {

// The folded profile in `path`; nullopt after printing "nativeprof: <problem>; <fix>" (the
// problem names the file and line, and quotes its bytes escaped) when it cannot be read or is
// not a folded profile. The caller then exits with kExitBadInput.
std::optional<symbolize::Profile> ReadInputProfile(const std::string& path, absl::string_view fix);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_INPUT_PROFILE_H_
