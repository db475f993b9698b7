#include "symbolize/line_program_check.h"

#include <dwarf.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "symbolize/span_reader.h"

namespace nativeprof::symbolize {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("line program: ", what));
}

// A string at `offset` of a string section, NUL-terminated within it.
bool StringAt(absl::string_view section, uint64_t offset) {
  return offset < section.size() && section.find('\0', offset) != absl::string_view::npos;
}

// One value of a DWARF 5 directory or file entry in `form`, read within the header.
absl::Status SkipEntryValue(const LineSections& sections, uint64_t form, uint8_t offset_size,
                            SpanReader* header) {
  uint64_t v = 0;
  switch (form) {
    case DW_FORM_string:
      return header->CString() ? absl::OkStatus() : Bad("unterminated string in an entry");
    case DW_FORM_strp:
    case DW_FORM_line_strp: {
      if (!header->Fixed(offset_size, &v)) return Bad("entry runs past the header");
      const absl::string_view strings = form == DW_FORM_strp ? sections.str : sections.line_str;
      return StringAt(strings, v) ? absl::OkStatus() : Bad("string offset outside its section");
    }
    case DW_FORM_udata:
    case DW_FORM_sdata:
      return header->Leb(&v) ? absl::OkStatus() : Bad("entry runs past the header");
    case DW_FORM_data1:
      return header->Skip(1) ? absl::OkStatus() : Bad("entry runs past the header");
    case DW_FORM_data2:
      return header->Skip(2) ? absl::OkStatus() : Bad("entry runs past the header");
    case DW_FORM_data4:
      return header->Skip(4) ? absl::OkStatus() : Bad("entry runs past the header");
    case DW_FORM_data8:
      return header->Skip(8) ? absl::OkStatus() : Bad("entry runs past the header");
    case DW_FORM_data16:
      return header->Skip(16) ? absl::OkStatus() : Bad("entry runs past the header");
    case DW_FORM_block:
      return header->Leb(&v) && header->Skip(v) ? absl::OkStatus()
                                                  : Bad("entry runs past the header");
    default:
      // strx and friends need the unit's string offsets, which libdw's line reader lacks.
      return Bad(absl::StrCat("entry form 0x", absl::Hex(form), " is not decoded in place"));
  }
}

// A DWARF 5 directory or file table: its entry format, its count, its entries.
absl::Status CheckEntryTable(const LineSections& sections, uint8_t offset_size, bool files,
                             SpanReader* header) {
  uint64_t format_count = 0;
  if (!header->Fixed(1, &format_count)) return Bad("entry format runs past the header");
  uint64_t forms[256];
  bool has_path = false, has_index = false;
  for (uint64_t i = 0; i < format_count; ++i) {
    uint64_t content = 0;
    if (!header->Leb(&content) || !header->Leb(&forms[i])) {
      return Bad("entry format runs past the header");
    }
    has_path |= content == DW_LNCT_path;
    has_index |= content == DW_LNCT_directory_index;
  }
  uint64_t count = 0;
  if (!header->Leb(&count)) return Bad("entry count runs past the header");
  if (count > 0 && (!has_path || (files && !has_index))) return Bad("entries without a path");
  // Each entry takes at least one byte per form: a larger count cannot fit.
  if (count > 0 && (format_count == 0 || count > header->remaining() / format_count)) {
    return Bad("entry count exceeds the header");
  }
  for (uint64_t n = 0; n < count; ++n) {
    for (uint64_t i = 0; i < format_count; ++i) {
      if (absl::Status st = SkipEntryValue(sections, forms[i], offset_size, header); !st.ok()) {
        return st;
      }
    }
  }
  return absl::OkStatus();
}

// DWARF 2-4: NUL-terminated directory names, then file entries (name, three ULEBs), each list
// ended by an empty name.
absl::Status CheckLegacyTables(SpanReader* header) {
  while (header->remaining() > 0 && header->Peek() != 0) {
    if (!header->CString()) return Bad("unterminated directory name");
  }
  if (!header->Skip(1)) return Bad("directory list runs past the header");
  while (header->remaining() > 0 && header->Peek() != 0) {
    uint64_t v = 0;
    if (!header->CString() || !header->Leb(&v) || !header->Leb(&v) || !header->Leb(&v)) {
      return Bad("file entry runs past the header");
    }
  }
  if (!header->Skip(1)) return Bad("file list runs past the header");
  return absl::OkStatus();
}

// The opcodes after the header, each with its operands within the unit.
absl::Status CheckOpcodes(absl::string_view standard_lengths, uint8_t address_size,
                          SpanReader* program) {
  // Operand counts the DWARF standard fixes for opcodes 1-12; libdw decodes them by these.
  static constexpr uint8_t kStandardOperands[] = {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
  while (program->remaining() > 0) {
    uint64_t opcode = 0, v = 0;
    program->Fixed(1, &opcode);
    if (opcode >= standard_lengths.size() + 1) continue;  // special opcode: no operands
    if (opcode == 0) {
      uint64_t length = 0, sub = 0;
      if (!program->Leb(&length) || length == 0 || length > program->remaining()) {
        return Bad("extended opcode runs past the unit");
      }
      const uint64_t end = program->position() + length;
      program->Fixed(1, &sub);
      if (sub == DW_LNE_set_address && length - 1 != address_size) {
        return Bad("DW_LNE_set_address of another size than the unit's addresses");
      }
      if (sub == DW_LNE_define_file) {
        if (!program->CString() || !program->Leb(&v) || !program->Leb(&v) || !program->Leb(&v) ||
            program->position() > end) {
          return Bad("DW_LNE_define_file runs past its length");
        }
      }
      if (!program->Skip(end - program->position())) return Bad("extended opcode overruns");
      continue;
    }
    const uint8_t operands = static_cast<uint8_t>(standard_lengths[opcode - 1]);
    if (opcode < sizeof(kStandardOperands) && operands != kStandardOperands[opcode]) {
      return Bad(absl::StrCat("standard opcode ", opcode, " declared with ", operands,
                              " operands"));
    }
    if (opcode == DW_LNS_fixed_advance_pc) {
      if (!program->Skip(2)) return Bad("DW_LNS_fixed_advance_pc runs past the unit");
      continue;
    }
    for (uint8_t i = 0; i < operands; ++i) {
      if (!program->Leb(&v)) return Bad("opcode operand runs past the unit");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLineProgram(const LineSections& sections, uint64_t offset,
                              uint8_t address_size) {
  if (offset >= sections.line.size()) return Bad("DW_AT_stmt_list lies outside .debug_line");
  if (address_size != 4 && address_size != 8) return Bad("unit address size is not 4 or 8");
  SpanReader section(sections.line.substr(offset));
  uint64_t unit_length = 0;
  uint8_t offset_size = 4;
  if (!ReadInitialLength(&section, &unit_length, &offset_size)) {
    return Bad("unit length runs past .debug_line or is a reserved value");
  }
  if (unit_length > section.remaining()) return Bad("unit_length runs past .debug_line");
  const absl::string_view unit =
      sections.line.substr(offset + section.position(), unit_length);
  SpanReader fields(unit);
  uint64_t version = 0, header_length = 0;
  if (!fields.Fixed(2, &version)) return Bad("unit too short for its version");
  if (version < 2 || version > 5) return Bad(absl::StrCat("unknown version ", version));
  if (version >= 5) {
    uint64_t line_address_size = 0, segment_selector_size = 0;
    if (!fields.Fixed(1, &line_address_size) || !fields.Fixed(1, &segment_selector_size)) {
      return Bad("unit too short for its header");
    }
    if (line_address_size != address_size || segment_selector_size != 0) {
      return Bad("address size differs from the unit's");
    }
  }
  if (!fields.Fixed(offset_size, &header_length)) return Bad("unit too short for its header");
  if (header_length > fields.remaining()) return Bad("header_length runs past the unit");
  const uint64_t header_start = fields.position();
  SpanReader header(unit.substr(header_start, header_length));
  uint64_t min_instruction_length = 0, max_ops = 1, default_is_stmt = 0, line_base = 0;
  uint64_t line_range = 0, opcode_base = 0;
  if (!header.Fixed(1, &min_instruction_length) || (version >= 4 && !header.Fixed(1, &max_ops)) ||
      !header.Fixed(1, &default_is_stmt) || !header.Fixed(1, &line_base) ||
      !header.Fixed(1, &line_range) || !header.Fixed(1, &opcode_base)) {
    return Bad("header too short");
  }
  if (max_ops == 0) return Bad("maximum_operations_per_instruction is 0");
  if (line_range == 0) return Bad("line_range is 0");  // special opcodes divide by it
  if (opcode_base == 0) return Bad("opcode_base is 0");
  const uint64_t lengths_at = header.position();
  if (!header.Skip(opcode_base - 1)) return Bad("standard_opcode_lengths run past the header");
  const absl::string_view standard_lengths =
      unit.substr(header_start + lengths_at, opcode_base - 1);

  if (version < 5) {
    if (absl::Status st = CheckLegacyTables(&header); !st.ok()) return st;
  } else {
    for (bool files : {false, true}) {
      if (absl::Status st = CheckEntryTable(sections, offset_size, files, &header); !st.ok()) {
        return st;
      }
    }
  }
  // libdw insists the tables end where header_length says (bar a 4-byte vendor field).
  if (header.remaining() != 0 && header.remaining() != 4) {
    return Bad("tables end before header_length");
  }
  SpanReader program(unit.substr(header_start + header_length));
  return CheckOpcodes(standard_lengths, address_size, &program);
}

}  // namespace nativeprof::symbolize
