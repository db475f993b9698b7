// The SIZE of `--call-graph dwarf[,SIZE]`: how many bytes of user stack the kernel copies into
// each sample. Pure functions; any thread.
#ifndef NATIVEPROF_UNWIND_DWARF_STACK_SIZE_H_
#define NATIVEPROF_UNWIND_DWARF_STACK_SIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof::unwind {

inline constexpr uint32_t kDefaultDwarfStackSize = 8192;
// The kernel caps sample_stack_user so the whole record fits in 64 KiB (perf uses the same limit).
inline constexpr uint32_t kMaxDwarfStackSize = 65528;

// Parses SIZE as perf does: a decimal byte count in [1, 65528], rounded up to a multiple of 8.
// An empty string gives the default, 8192. Errors: kInvalidArgument (not a number, 0, too large),
// with a message that states the accepted range.
absl::StatusOr<uint32_t> ParseDwarfStackSize(absl::string_view text);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_DWARF_STACK_SIZE_H_
