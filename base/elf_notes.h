// ELF note parsing shared by the sampler (build-ids of mapped files at attach time, read straight
// from PT_NOTE without libelf) and the symbolizer (build-ids of opened images). Pure; any thread.
#ifndef NATIVEPROF_BASE_ELF_NOTES_H_
#define NATIVEPROF_BASE_ELF_NOTES_H_

#include "absl/strings/string_view.h"

namespace nativeprof {

// The descriptor bytes of the first NT_GNU_BUILD_ID note ("GNU" owner, 1 to 64 bytes) in `notes`,
// the raw contents of a PT_NOTE segment or SHT_NOTE section; empty when there is none or the
// notes are malformed. The view points into `notes`.
absl::string_view FindGnuBuildId(absl::string_view notes);

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_ELF_NOTES_H_
