// The segments of an ELF file read straight from its program headers, without libelf: the sampler
// needs a file's build-id (PT_NOTE) and its program interpreter (PT_INTERP) before and apart from
// the symbolizer. 32- and 64-bit little-endian files; any thread.
#ifndef NATIVEPROF_BASE_ELF_SEGMENTS_H_
#define NATIVEPROF_BASE_ELF_SEGMENTS_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace nativeprof {

// Calls `visit` with the file contents of each segment of `type` (PT_NOTE, PT_INTERP, ...) in the
// ELF file open on `fd`, in program-header order, until it returns false. Segments larger than
// `max_bytes`, or that the file does not hold in full, are skipped; a file that is not ELF, or
// whose headers are impossible, has none.
void ForEachElfSegment(int fd, uint32_t type, size_t max_bytes,
                       absl::FunctionRef<bool(absl::string_view contents)> visit);

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_ELF_SEGMENTS_H_
