// Where the units of .debug_info start and which addresses .debug_aranges gives each, read from
// the section bytes (as libdw has them, decompressed) instead of through libdw's walks:
// dwarf_next_unit looks into each unit for a split-DWARF id, and dwarf_getaranges reads each
// set's unit header and sorts the lot. For libc6-dbg (2,063 units, 2,083 ranges) the two took
// 10 ms of every run that named a libc frame; these loops take well under one. Pure; any thread.
#ifndef NATIVEPROF_SYMBOLIZE_DWARF_UNIT_TABLE_H_
#define NATIVEPROF_SYMBOLIZE_DWARF_UNIT_TABLE_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

struct DwarfUnitHeader {
  uint64_t offset = 0;      // of the unit header in .debug_info
  uint64_t die_offset = 0;  // of the unit's first DIE, right after the header
};

// Every unit of `debug_info` (DWARF 2-5, 32- or 64-bit), in order, up to the first whose header
// is malformed or whose length runs past the section, as dwarf_next_unit stops there.
std::vector<DwarfUnitHeader> ReadDwarfUnitHeaders(absl::string_view debug_info);

// Calls `range` with (unit header offset, start, length) for each address range of
// `debug_aranges`, in the section's order. A set of another version than 2, an address size
// other than 4 or 8, or segment selectors is skipped; a set whose length runs past the section
// ends the walk. The (0, 0) pair ends a set.
void ForEachDwarfArange(absl::string_view debug_aranges,
                        absl::FunctionRef<void(uint64_t unit, uint64_t start, uint64_t length)>
                            range);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_DWARF_UNIT_TABLE_H_
