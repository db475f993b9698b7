// ModuleFiles / ElfCfi: unwind tables of the vdso image and of a program, file offset <-> ELF
// address through the image, and the per-offset rule cache (a second lookup is a hit and returns
// the same rule). Opening, paths and the vdso reader are tested in tests/unit/module.
#include "unwind/module_files.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <unistd.h>

#include <cstdlib>

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "module/vdso.h"
#include "tests/testing/test_support.h"
#include "unwind/elf_cfi.h"

namespace nativeprof::unwind {
namespace {

TEST(ModuleFilesTest, ReadsTheVdsoImage) {
  // pid 0: /proc/0/mem does not exist, so this falls back to our own vdso.
  auto image = module::ReadVdsoImage(0, 0, 0);
  ASSERT_TRUE(image.ok()) << image.status();
  ASSERT_GT(image->size(), sizeof(Elf64_Ehdr));
  EXPECT_EQ(std::memcmp(image->data(), ELFMAG, SELFMAG), 0);
  auto elf = module::ElfImage::FromBytes(*std::move(image), "[vdso]");
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto cfi = ElfCfi::FromImage(*std::move(elf));
  ASSERT_TRUE(cfi.ok()) << cfi.status();
  EXPECT_TRUE((*cfi)->has_cfi());
}

TEST(ElfCfiTest, FindsAndCachesRulesOfAProgram) {
  auto elf = module::ElfImage::Open(nativeprof::testing::TargetPath("nofp_workload"));
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto cfi = ElfCfi::FromImage(*std::move(elf));
  ASSERT_TRUE(cfi.ok()) << cfi.status();
  ElfCfi& m = **cfi;
  ASSERT_TRUE(m.image().eh_frame_hdr().has_value());
  const uint64_t hdr_vaddr = m.image().eh_frame_hdr()->svma;
  const uint64_t hdr_off = m.image().eh_frame_hdr()->offset;
  uint64_t vaddr = 0, back = 0;
  ASSERT_TRUE(m.image().FileOffsetToSvma(hdr_off, &vaddr));
  EXPECT_EQ(vaddr, hdr_vaddr);
  ASSERT_TRUE(m.image().SvmaToFileOffset(vaddr, &back));
  EXPECT_EQ(back, hdr_off);
  // Find some covered instruction: scan the first pages of the text segment.
  const CfiRule* rule = nullptr;
  uint64_t offset = 0;
  for (offset = 0x1000; offset < 0x3000 && rule == nullptr; offset += 4) rule = m.Find(offset);
  ASSERT_NE(rule, nullptr);
  offset -= 4;
  const uint64_t misses = m.stats().misses;
  EXPECT_EQ(m.Find(offset), rule);
  EXPECT_EQ(m.stats().misses, misses);
  EXPECT_GE(m.stats().hits, 1u);
  EXPECT_EQ(rule->regs[kDwarfRa].kind, RegKind::kOffset);
  EXPECT_EQ(m.Find(0xfffffff0), nullptr);  // past every segment
}

// A function that returns from its middle has CFI rows that remember the body's state before an
// epilogue and restore it after: libdw then reports the restored row as starting where the state
// was remembered, before the epilogue's own rows. Taken for the row's range, that gave the
// epilogue's addresses the body's CFA (CFA rsp+112 in the middle of libc's _int_free's pops,
// where it is rsp+32), and their samples an [unknown] caller. Every address of a program built
// by the suite must get the CFA libdw computes for it alone, whatever was looked up before:
// highest first here, so each restored row comes before the epilogue in front of it.
TEST(ElfCfiTest, RowsAfterARestoredStateLeaveTheEpilogueItsOwnRows) {
  const std::string path = nativeprof::testing::TargetPath("alloc_workload");
  auto elf = module::ElfImage::Open(path);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto cfi = ElfCfi::FromImage(*std::move(elf));
  ASSERT_TRUE(cfi.ok()) << cfi.status();
  ElfCfi& m = **cfi;
  Dwarf_CFI* reference = dwarf_getcfi_elf(m.image().elf());
  ASSERT_NE(reference, nullptr);
  int compared = 0, restored_rows = 0;
  for (uint64_t offset = 0x4000; offset-- > 0x2000;) {
    uint64_t svma = 0;
    if (!m.image().FileOffsetToSvma(offset, &svma)) continue;
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(reference, svma, &frame) != 0 || frame == nullptr) continue;
    Dwarf_Addr start = 0, end = 0;
    bool signal = false;
    (void)dwarf_frame_info(frame, &start, &end, &signal);
    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    // libdw gives a register + offset CFA as DW_OP_bregx (register, offset).
    const bool reg_offset = dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 &&
                            ops[0].atom == DW_OP_bregx;
    const int reg = reg_offset ? static_cast<int>(ops[0].number) : -1;
    const int64_t cfa_offset = reg_offset ? static_cast<int64_t>(ops[0].number2) : 0;
    free(frame);
    const CfiRule* rule = m.Find(offset);
    ASSERT_NE(rule, nullptr) << std::hex << svma;
    if (!reg_offset) continue;
    // libdw's start lies before the address's own row: a row after DW_CFA_restore_state.
    Dwarf_Frame* at_start = nullptr;
    if (start < svma && dwarf_cfi_addrframe(reference, start, &at_start) == 0) {
      Dwarf_Addr s2 = 0, e2 = 0;
      (void)dwarf_frame_info(at_start, &s2, &e2, &signal);
      restored_rows += e2 <= svma;
      free(at_start);
    }
    ASSERT_EQ(rule->cfa.kind, CfaKind::kRegOffset) << std::hex << svma;
    EXPECT_EQ(rule->cfa.reg, reg) << std::hex << svma;
    EXPECT_EQ(rule->cfa.offset, cfa_offset) << std::hex << svma;
    ++compared;
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(restored_rows, 0) << "the program has no restored CFI state to test";
  // Rows are still reused for the PCs below the first one looked up in them.
  EXPECT_GT(m.stats().range_hits, static_cast<uint64_t>(compared) / 2);
}

}  // namespace
}  // namespace nativeprof::unwind
