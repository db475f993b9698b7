#include "unwind/dwarf_stack_size.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace nativeprof::unwind {

absl::StatusOr<uint32_t> ParseDwarfStackSize(absl::string_view text) {
  if (text.empty()) return kDefaultDwarfStackSize;
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 8 || value > kMaxDwarfStackSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid dwarf stack size '", text, "'; use a byte count from 8 to ",
                     kMaxDwarfStackSize, " (default ", kDefaultDwarfStackSize, ")"));
  }
  // Round up to 8 as perf does; 65528 is itself a multiple of 8, so this never exceeds the cap.
  return static_cast<uint32_t>((value + 7) & ~uint64_t{7});
}

}  // namespace nativeprof::unwind
