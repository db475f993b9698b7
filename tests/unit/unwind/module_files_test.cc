// ModuleFiles / ElfCfi: unwind tables of the vdso image and of a program, file offset <-> ELF
// address through the image, and the per-offset rule cache (a second lookup is a hit and returns
// the same rule). Opening, paths and the vdso reader are tested in tests/unit/module.
#include "unwind/module_files.h"

#include <elf.h>
#include <unistd.h>

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

}  // namespace
}  // namespace nativeprof::unwind
