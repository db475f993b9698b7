#include "symbolize/line_program_check.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::TargetPath;
using ::testing::HasSubstr;

// Little-endian bytes of a DWARF line program, built field by field.
class LineProgramBuilder {
 public:
  LineProgramBuilder& U8(uint8_t v) {
    bytes_.push_back(static_cast<char>(v));
    return *this;
  }
  LineProgramBuilder& U16(uint16_t v) { return U8(v & 0xff).U8(v >> 8); }
  LineProgramBuilder& U32(uint32_t v) { return U16(v & 0xffff).U16(v >> 16); }
  LineProgramBuilder& U64(uint64_t v) { return U32(v & 0xffffffff).U32(v >> 32); }
  LineProgramBuilder& Uleb(uint64_t v) {
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      U8(byte | (v != 0 ? 0x80 : 0));
    } while (v != 0);
    return *this;
  }
  LineProgramBuilder& Str(const std::string& s) {
    bytes_ += s;
    return U8(0);
  }
  size_t size() const { return bytes_.size(); }
  const std::string& bytes() const { return bytes_; }
  void PatchU32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  }

 private:
  std::string bytes_;
};

// A DWARF 4 (or 5) unit with one directory, one file and a short program.
struct UnitParts {
  int version = 4;
  uint8_t line_range = 14;
  uint8_t advance_pc_operands = 1;
  uint64_t set_address_length = 9;
  uint64_t v5_path_form = DW_FORM_string;
  uint32_t v5_line_strp = 0;
  int64_t header_length_delta = 0;
};

std::string Unit(const UnitParts& parts) {
  LineProgramBuilder b;
  b.U32(0).U16(static_cast<uint16_t>(parts.version));
  if (parts.version >= 5) b.U8(8).U8(0);
  const size_t header_length_at = b.size();
  b.U32(0);
  const size_t header_start = b.size();
  b.U8(1).U8(1).U8(1).U8(static_cast<uint8_t>(-5)).U8(parts.line_range).U8(13);
  for (uint8_t n : std::initializer_list<uint8_t>{0, parts.advance_pc_operands, 1, 1, 1, 0, 0, 0,
                                                  1, 0, 0, 1}) {
    b.U8(n);
  }
  if (parts.version < 5) {
    b.Str("/src").U8(0);
    b.Str("a.c").Uleb(1).Uleb(0).Uleb(0).U8(0);
  } else {
    auto path = [&](const std::string& s) {
      if (parts.v5_path_form == DW_FORM_line_strp) {
        b.U32(parts.v5_line_strp);
      } else if (parts.v5_path_form == DW_FORM_string) {
        b.Str(s);
      } else {
        b.Uleb(0);
      }
    };
    b.U8(1).Uleb(DW_LNCT_path).Uleb(parts.v5_path_form).Uleb(1);
    path("/src");
    b.U8(2).Uleb(DW_LNCT_path).Uleb(parts.v5_path_form).Uleb(DW_LNCT_directory_index)
        .Uleb(DW_FORM_udata).Uleb(1);
    path("a.c");
    b.Uleb(0);
  }
  const int64_t header_length =
      static_cast<int64_t>(b.size() - header_start) + parts.header_length_delta;
  b.PatchU32(header_length_at, static_cast<uint32_t>(header_length));
  // set_address, a special opcode, advance_pc, a fixed advance, end_sequence.
  b.U8(0).Uleb(parts.set_address_length).U8(DW_LNE_set_address).U64(0x401000);
  b.U8(20).U8(DW_LNS_advance_pc).Uleb(300).U8(DW_LNS_fixed_advance_pc).U16(4);
  b.U8(0).Uleb(1).U8(DW_LNE_end_sequence);
  std::string bytes = b.bytes();
  LineProgramBuilder length;
  length.U32(static_cast<uint32_t>(bytes.size() - 4));
  bytes.replace(0, 4, length.bytes());
  return bytes;
}

absl::Status Check(const std::string& line, absl::string_view line_str = {}) {
  return CheckLineProgram(LineSections{line, {}, line_str}, 0, 8);
}

TEST(LineProgramCheckTest, WellFormedUnitsPass) {
  EXPECT_TRUE(Check(Unit({})).ok()) << Check(Unit({}));
  UnitParts v5;
  v5.version = 5;
  EXPECT_TRUE(Check(Unit(v5)).ok()) << Check(Unit(v5));
  v5.v5_path_form = DW_FORM_line_strp;
  EXPECT_TRUE(Check(Unit(v5), absl::string_view("/src\0", 5)).ok());
}

TEST(LineProgramCheckTest, EveryTruncationIsRefused) {
  for (int version : {4, 5}) {
    UnitParts parts;
    parts.version = version;
    const std::string unit = Unit(parts);
    for (size_t size = 0; size < unit.size(); ++size) {
      SCOPED_TRACE(size);
      EXPECT_FALSE(Check(unit.substr(0, size)).ok());
    }
  }
}

TEST(LineProgramCheckTest, MalformedFieldsAreNamed) {
  UnitParts p;
  p.header_length_delta = 1000;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("header_length runs past the unit"));
  p = {};
  p.header_length_delta = 7;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("tables end before header_length"));
  p = {};
  p.line_range = 0;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("line_range is 0"));
  p = {};
  p.advance_pc_operands = 3;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("standard opcode 2 declared with 3"));
  p = {};
  p.set_address_length = 5;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("DW_LNE_set_address"));
  p = {};
  p.set_address_length = 1000;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("extended opcode runs past the unit"));
  p = {};
  p.header_length_delta = -3;  // the file table ends past header_length
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("runs past the header"));
  p = {};
  p.version = 5;
  p.v5_path_form = DW_FORM_strx1;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("is not decoded in place"));
  p.v5_path_form = DW_FORM_line_strp;
  p.v5_line_strp = 4096;
  EXPECT_THAT(Check(Unit(p), absl::string_view("/src\0", 5)).message(),
              HasSubstr("string offset outside its section"));
  p.version = 6;
  EXPECT_THAT(Check(Unit(p)).message(), HasSubstr("unknown version 6"));
  EXPECT_THAT(CheckLineProgram(LineSections{Unit({}), {}, {}}, 1u << 20, 8).message(),
              HasSubstr("outside .debug_line"));
}

// No false refusals: every unit of real compilers' output passes (GCC's DWARF 5, rustc's, and
// glibc's debug file where libc6-dbg is installed).
TEST(LineProgramCheckTest, EveryUnitOfRealBinariesPasses) {
  std::vector<std::string> files = {TargetPath("sym_prog"), TargetPath("sym_prog_shared")};
  if (std::filesystem::exists(TargetPath("sym_rust_v0"))) files.push_back(TargetPath("sym_rust_v0"));
  std::error_code no_debug_files;  // no libc6-dbg: the test binaries alone
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           "/usr/lib/debug/.build-id", std::filesystem::directory_options::skip_permission_denied,
           no_debug_files)) {
    if (files.size() >= 6) break;
    if (entry.path().extension() == ".debug") files.push_back(entry.path().string());
  }
  size_t units = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    NP_ASSERT_OK_AND_ASSIGN(std::unique_ptr<module::ElfImage> elf, module::ElfImage::Open(path));
    Dwarf* dwarf = dwarf_begin_elf(elf->elf(), DWARF_C_READ, nullptr);
    ASSERT_NE(dwarf, nullptr);
    auto section = [&](const char* name) -> absl::string_view {
      absl::StatusOr<absl::string_view> data = elf->SectionData(name);
      return data.ok() ? *data : absl::string_view();
    };
    const LineSections sections{section(".debug_line"), section(".debug_str"),
                                section(".debug_line_str")};
    Dwarf_Off offset = 0, next = 0;
    size_t header_size = 0;
    uint8_t address_size = 0;
    while (dwarf_next_unit(dwarf, offset, &next, &header_size, nullptr, nullptr, &address_size,
                           nullptr, nullptr, nullptr) == 0) {
      Dwarf_Die die;
      Dwarf_Attribute attr;
      Dwarf_Word stmt_list = 0;
      if (dwarf_offdie(dwarf, offset + header_size, &die) != nullptr &&
          dwarf_attr(&die, DW_AT_stmt_list, &attr) != nullptr &&
          dwarf_formudata(&attr, &stmt_list) == 0) {
        ++units;
        absl::Status st = CheckLineProgram(sections, stmt_list, address_size);
        EXPECT_TRUE(st.ok()) << "unit at " << offset << ": " << st;
      }
      offset = next;
    }
    dwarf_end(dwarf);
  }
  EXPECT_GT(units, 2u);
}

}  // namespace
}  // namespace nativeprof::symbolize
