// ModuleFiles / ElfCfi: opening modules, the vdso image, file offset <-> ELF address, and the
// per-offset rule cache (a second lookup is a hit and returns the same rule).
#include <elf.h>
#include <unistd.h>

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"
#include "unwind/elf_cfi.h"
#include "unwind/module_files.h"

namespace nativeprof::unwind {
namespace {

TEST(ModuleFilesTest, AnonymousPaths) {
  for (const char* p : {"", "//anon", "[heap]", "[stack]", "[anon:jit]", "[vsyscall]", "/memfd:x"}) {
    EXPECT_TRUE(ModuleFiles::IsAnonymous(p)) << p;
  }
  for (const char* p : {"[vdso]", "/usr/lib/libc.so.6", "/tmp/a (deleted)"}) {
    EXPECT_FALSE(ModuleFiles::IsAnonymous(p)) << p;
  }
}

TEST(ModuleFilesTest, ReadsTheVdsoImage) {
  // pid 0: /proc/0/mem does not exist, so this falls back to our own vdso.
  auto image = ReadVdsoImage(0, 0, 0);
  ASSERT_TRUE(image.ok()) << image.status();
  ASSERT_GT(image->size(), sizeof(Elf64_Ehdr));
  EXPECT_EQ(std::memcmp(image->data(), ELFMAG, SELFMAG), 0);
  auto cfi = ElfCfi::FromImage(*std::move(image));
  ASSERT_TRUE(cfi.ok()) << cfi.status();
  EXPECT_TRUE((*cfi)->has_cfi());
}

TEST(ElfCfiTest, OpenErrors) {
  EXPECT_EQ(ElfCfi::Open("/nonexistent/x.so", "").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ElfCfi::Open(nativeprof::testing::SourcePath("docs/unwinding.md"), "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ElfCfiTest, FindsAndCachesRulesOfAProgram) {
  auto cfi = ElfCfi::Open(nativeprof::testing::TargetPath("nofp_workload"), "");
  ASSERT_TRUE(cfi.ok()) << cfi.status();
  ElfCfi& m = **cfi;
  uint64_t hdr_vaddr, hdr_off, hdr_size;
  ASSERT_TRUE(m.EhFrameHdr(&hdr_vaddr, &hdr_off, &hdr_size));
  uint64_t vaddr = 0, back = 0;
  ASSERT_TRUE(m.FileOffsetToVaddr(hdr_off, &vaddr));
  EXPECT_EQ(vaddr, hdr_vaddr);
  ASSERT_TRUE(m.VaddrToFileOffset(vaddr, &back));
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
