// Checks a DWARF line program (.debug_line unit) the way libdw will decode it, before libdw does.
// elfutils 0.188 (Debian 12's libdw) reads past the end of malformed line tables in
// dwarf_getsrclines (an ASan heap over-read found by the ELF-loader fuzzer), so DwarfInfo hands
// libdw only units that this check has walked entirely within their sections: the header and its
// directory and file tables (DWARF 2-5, including DWARF 5 entry formats and string offsets into
// .debug_str/.debug_line_str), then every opcode of the program with its operands. Pure; any
// thread.
#ifndef NATIVEPROF_SYMBOLIZE_LINE_PROGRAM_CHECK_H_
#define NATIVEPROF_SYMBOLIZE_LINE_PROGRAM_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

// The section bytes a line program may refer to (decompressed).
struct LineSections {
  absl::string_view line;      // .debug_line
  absl::string_view str;       // .debug_str (DW_FORM_strp in DWARF 5 entry formats)
  absl::string_view line_str;  // .debug_line_str (DW_FORM_line_strp)
};

// OK when the line program at `offset` of `sections.line` (a compilation unit's DW_AT_stmt_list)
// is well formed to its end: every length, count, string and operand lies within its unit and its
// sections, and only forms libdw decodes in place are used. `address_size` is the unit's (4 or 8).
// Errors: kDataLoss naming the first problem ("header_length runs past the unit", ...).
absl::Status CheckLineProgram(const LineSections& sections, uint64_t offset, uint8_t address_size);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_LINE_PROGRAM_CHECK_H_
