#include "symbolize/dwarf_unit_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

using ::testing::ElementsAre;

// Little-endian section bytes, built field by field.
class Bytes {
 public:
  Bytes& U(uint64_t v, int size) {
    for (int i = 0; i < size; ++i) s_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  Bytes& Pad(size_t n) { return U(0, static_cast<int>(n)); }
  size_t size() const { return s_.size(); }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

MATCHER_P2(UnitAt, offset, die_offset, "") {
  return arg.offset == static_cast<uint64_t>(offset) &&
         arg.die_offset == static_cast<uint64_t>(die_offset);
}

TEST(DwarfUnitTableTest, UnitHeadersOfEveryVersionAndUnitType) {
  Bytes b;
  // DWARF 4, 32-bit: length, version, abbrev offset, address size; then 5 bytes of DIEs.
  b.U(2 + 4 + 1 + 5, 4).U(4, 2).U(0, 4).U(8, 1).Pad(5);  // at 0, DIE at 11
  // DWARF 5 compile unit: length, version, unit type, address size, abbrev offset.
  b.U(2 + 1 + 1 + 4 + 3, 4).U(5, 2).U(DW_UT_compile, 1).U(8, 1).U(0, 4).Pad(3);  // at 16, 28
  // DWARF 5 skeleton unit: + dwo_id.
  b.U(2 + 1 + 1 + 4 + 8 + 1, 4).U(5, 2).U(DW_UT_skeleton, 1).U(8, 1).U(0, 4).Pad(8).Pad(1);
  // DWARF 5 type unit, 64-bit: + type signature and type offset (8 bytes each).
  b.U(0xffffffff, 4).U(2 + 1 + 1 + 8 + 8 + 8 + 2, 8).U(5, 2).U(DW_UT_type, 1).U(8, 1).U(0, 8)
      .Pad(8).U(0, 8).Pad(2);
  const std::vector<DwarfUnitHeader> units = ReadDwarfUnitHeaders(b.str());
  EXPECT_THAT(units, ElementsAre(UnitAt(0, 11), UnitAt(16, 28), UnitAt(31, 51),
                                 UnitAt(52, 52 + 12 + 2 + 1 + 1 + 8 + 8 + 8)));
}

TEST(DwarfUnitTableTest, TheWalkStopsAtTheFirstBadUnit) {
  Bytes good;
  good.U(2 + 4 + 1, 4).U(4, 2).U(0, 4).U(8, 1);
  for (const auto& [what, bad] : std::vector<std::pair<const char*, Bytes>>{
           {"a length past the section", Bytes().U(100, 4).U(4, 2).U(0, 4).U(8, 1)},
           {"a reserved length", Bytes().U(0xfffffff0, 4).Pad(16)},
           {"version 1", Bytes().U(7, 4).U(1, 2).U(0, 4).U(8, 1)},
           {"version 6", Bytes().U(7, 4).U(6, 2).U(0, 4).U(8, 1)},
           {"an unknown unit type", Bytes().U(8, 4).U(5, 2).U(0x80, 1).U(8, 1).U(0, 4)},
           {"a header longer than its unit", Bytes().U(3, 4).U(4, 2).U(0, 4).U(8, 1)},
           {"a length field cut short", Bytes().U(0xffffffff, 4).U(1, 2)},
       }) {
    SCOPED_TRACE(what);
    const std::vector<DwarfUnitHeader> units = ReadDwarfUnitHeaders(good.str() + bad.str());
    EXPECT_THAT(units, ElementsAre(UnitAt(0, 11)));
  }
  EXPECT_TRUE(ReadDwarfUnitHeaders("").empty());
}

using Range = std::tuple<uint64_t, uint64_t, uint64_t>;

std::vector<Range> Aranges(const std::string& section) {
  std::vector<Range> out;
  ForEachDwarfArange(section, [&](uint64_t unit, uint64_t start, uint64_t length) {
    out.emplace_back(unit, start, length);
  });
  return out;
}

TEST(DwarfUnitTableTest, ArangeSetsAndTheirTuples) {
  Bytes b;
  // 32-bit set for the unit at 0x10, 8-byte addresses: 12 bytes of header, padded to 16.
  b.U(2 + 4 + 1 + 1 + 4 + 3 * 16, 4).U(2, 2).U(0x10, 4).U(8, 1).U(0, 1).Pad(4);
  b.U(0x1000, 8).U(0x20, 8).U(0x2000, 8).U(0x8, 8).U(0, 8).U(0, 8);
  // Version 3: skipped, and the walk goes on.
  b.U(2 + 4 + 1 + 1 + 4 + 16, 4).U(3, 2).U(0x20, 4).U(8, 1).U(0, 1).Pad(4).U(1, 8).U(1, 8);
  // Segment selectors: skipped.
  b.U(2 + 4 + 1 + 1 + 4 + 16, 4).U(2, 2).U(0x30, 4).U(8, 1).U(4, 1).Pad(4).U(1, 8).U(1, 8);
  // 64-bit set, 4-byte addresses: 24 bytes of header, a multiple of 8 already; no terminator.
  b.U(0xffffffff, 4).U(2 + 8 + 1 + 1 + 8, 8).U(2, 2).U(0x40, 8).U(4, 1).U(0, 1).U(0x300, 4)
      .U(0x10, 4);
  EXPECT_THAT(Aranges(b.str()), ElementsAre(Range{0x10, 0x1000, 0x20}, Range{0x10, 0x2000, 0x8},
                                            Range{0x40, 0x300, 0x10}));
  // A set that runs past the section ends the walk; one cut inside its tuples keeps the whole
  // tuples before the cut.
  Bytes cut;
  cut.U(2 + 4 + 1 + 1 + 4 + 24, 4).U(2, 2).U(0x50, 4).U(8, 1).U(0, 1).Pad(4);
  cut.U(0x4000, 8).U(0x10, 8).U(0x5000, 8);
  EXPECT_THAT(Aranges(cut.str()), ElementsAre(Range{0x50, 0x4000, 0x10}));
  EXPECT_TRUE(Aranges(Bytes().U(500, 4).U(2, 2).str()).empty());
  EXPECT_TRUE(Aranges("").empty());
}

// The same units and ranges as libdw's dwarf_next_unit and dwarf_getaranges, on the suite's
// programs (DWARF 5 and 4, split DWARF, compressed sections, Rust) and, where libc6-dbg is
// installed, libc's debug file (2,000 units).
TEST(DwarfUnitTableTest, AgreesWithLibdwOnRealPrograms) {
  std::vector<std::string> files;
  for (const char* program : {"sym_prog", "sym_prog_split", "sym_prog_split4", "sym_prog_zlib",
                              "sym_rust_v0", "sym_prog_shared"}) {
    files.push_back(::nativeprof::testing::TargetPath(program));
  }
  if (absl::StatusOr<std::unique_ptr<module::ElfImage>> libc =
          module::ElfImage::Open("/lib/x86_64-linux-gnu/libc.so.6");
      libc.ok() && (*libc)->build_id().size() > 2) {
    const std::string& id = (*libc)->build_id();
    const std::string debug =
        absl::StrCat("/usr/lib/debug/.build-id/", id.substr(0, 2), "/", id.substr(2), ".debug");
    if (::access(debug.c_str(), R_OK) == 0) files.push_back(debug);
  }
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    absl::StatusOr<std::unique_ptr<module::ElfImage>> elf = module::ElfImage::Open(file);
    ASSERT_TRUE(elf.ok()) << elf.status();
    Dwarf* dwarf = dwarf_begin_elf((*elf)->elf(), DWARF_C_READ, nullptr);
    ASSERT_NE(dwarf, nullptr);
    auto section = [&](absl::string_view name) -> std::string {
      absl::StatusOr<absl::string_view> data = (*elf)->SectionData(name);
      return data.ok() ? std::string(*data) : std::string();
    };
    std::vector<uint64_t> libdw_dies, ours;
    Dwarf_Off offset = 0, next = 0;
    size_t header_size = 0;
    while (dwarf_next_unit(dwarf, offset, &next, &header_size, nullptr, nullptr, nullptr,
                           nullptr, nullptr, nullptr) == 0) {
      libdw_dies.push_back(offset + header_size);
      offset = next;
    }
    absl::flat_hash_map<uint64_t, uint64_t> die_of;
    for (const DwarfUnitHeader& u : ReadDwarfUnitHeaders(section(".debug_info"))) {
      ours.push_back(u.die_offset);
      die_of[u.offset] = u.die_offset;
    }
    EXPECT_EQ(ours, libdw_dies);
    EXPECT_FALSE(ours.empty());

    std::vector<Range> libdw_ranges, our_ranges;
    Dwarf_Aranges* aranges = nullptr;
    size_t n = 0;
    if (dwarf_getaranges(dwarf, &aranges, &n) == 0) {
      for (size_t i = 0; i < n; ++i) {
        Dwarf_Addr start = 0;
        Dwarf_Word length = 0;
        Dwarf_Off die = 0;
        ASSERT_EQ(dwarf_getarangeinfo(dwarf_onearange(aranges, i), &start, &length, &die), 0);
        libdw_ranges.emplace_back(die, start, length);
      }
    }
    ForEachDwarfArange(section(".debug_aranges"), [&](uint64_t unit, uint64_t start,
                                                      uint64_t length) {
      our_ranges.emplace_back(die_of.contains(unit) ? die_of[unit] : ~uint64_t{0}, start, length);
    });
    std::sort(libdw_ranges.begin(), libdw_ranges.end());
    std::sort(our_ranges.begin(), our_ranges.end());
    EXPECT_EQ(our_ranges, libdw_ranges);
    dwarf_end(dwarf);
  }
}

}  // namespace
}  // namespace nativeprof::symbolize
