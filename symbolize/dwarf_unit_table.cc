#include "symbolize/dwarf_unit_table.h"

#include <dwarf.h>

#include "symbolize/span_reader.h"

namespace nativeprof::symbolize {

std::vector<DwarfUnitHeader> ReadDwarfUnitHeaders(absl::string_view debug_info) {
  std::vector<DwarfUnitHeader> units;
  uint64_t offset = 0;
  while (offset < debug_info.size()) {
    SpanReader r(debug_info.substr(offset));
    uint64_t length = 0, version = 0, unit_type = DW_UT_compile, skip = 0;
    uint8_t offset_size = 4;
    if (!ReadInitialLength(&r, &length, &offset_size) || length > r.remaining()) break;
    const uint64_t end = offset + r.position() + length;
    if (!r.Fixed(2, &version) || version < 2 || version > 5) break;
    if (version == 5) {
      // unit_type, address_size, debug_abbrev_offset, then what the type adds.
      if (!r.Fixed(1, &unit_type) || !r.Skip(1 + offset_size)) break;
      if (unit_type == DW_UT_skeleton || unit_type == DW_UT_split_compile) {
        skip = 8;  // dwo_id
      } else if (unit_type == DW_UT_type || unit_type == DW_UT_split_type) {
        skip = 8 + offset_size;  // type_signature, type_offset
      } else if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) {
        break;
      }
    } else {
      skip = offset_size + 1;  // debug_abbrev_offset, address_size
    }
    if (!r.Skip(skip)) break;
    const uint64_t die_offset = offset + r.position();
    if (die_offset > end) break;  // a header longer than its unit
    units.push_back({offset, die_offset});
    offset = end;
  }
  return units;
}

void ForEachDwarfArange(absl::string_view debug_aranges,
                        absl::FunctionRef<void(uint64_t unit, uint64_t start, uint64_t length)>
                            range) {
  uint64_t offset = 0;
  while (offset < debug_aranges.size()) {
    SpanReader head(debug_aranges.substr(offset));
    uint64_t length = 0;
    uint8_t offset_size = 4;
    if (!ReadInitialLength(&head, &length, &offset_size) || length > head.remaining()) return;
    const uint64_t set_bytes = head.position() + length;
    SpanReader r(debug_aranges.substr(offset, set_bytes));
    offset += set_bytes;  // the next set, whatever this one holds
    uint64_t version = 0, unit = 0, address_size = 0, segment_size = 0;
    if (!r.Skip(set_bytes - length) || !r.Fixed(2, &version) || !r.Fixed(offset_size, &unit) ||
        !r.Fixed(1, &address_size) || !r.Fixed(1, &segment_size)) {
      continue;
    }
    if (version != 2 || (address_size != 4 && address_size != 8) || segment_size != 0) continue;
    // The tuples start at the set's first multiple of their size (two addresses).
    const uint64_t tuple = 2 * address_size;
    if (!r.Skip((tuple - r.position() % tuple) % tuple)) continue;
    uint64_t start = 0, size = 0;
    while (r.Fixed(address_size, &start) && r.Fixed(address_size, &size)) {
      if (start == 0 && size == 0) break;
      range(unit, start, size);
    }
  }
}

}  // namespace nativeprof::symbolize
