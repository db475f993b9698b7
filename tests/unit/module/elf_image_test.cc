// ElfImage: open errors, and the one file offset <-> svma translation over the PT_LOAD headers.
#include "module/elf_image.h"

#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::module {
namespace {

TEST(ElfImageTest, OpenErrors) {
  EXPECT_EQ(ElfImage::Open("/nonexistent/x.so").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ElfImage::Open(nativeprof::testing::SourcePath("docs/unwinding.md")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ElfImageTest, FileOffsetAndSvmaRoundTripThroughEveryLoad) {
  auto image = ElfImage::Open(nativeprof::testing::TargetPath("nofp_workload"));
  ASSERT_TRUE(image.ok()) << image.status();
  ASSERT_FALSE((*image)->loads().empty());
  for (const LoadSegment& seg : (*image)->loads()) {
    if (seg.filesz == 0) continue;
    uint64_t svma = 0, back = 0;
    ASSERT_TRUE((*image)->FileOffsetToSvma(seg.offset + seg.filesz - 1, &svma));
    EXPECT_EQ(svma, seg.vaddr + seg.filesz - 1);
    ASSERT_TRUE((*image)->SvmaToFileOffset(svma, &back));
    EXPECT_EQ(back, seg.offset + seg.filesz - 1);
  }
  uint64_t unused;
  EXPECT_FALSE((*image)->FileOffsetToSvma(uint64_t{1} << 40, &unused));
  // The bytes by file offset are the file's: the ELF magic at 0, nothing past the end.
  EXPECT_EQ((*image)->Bytes(0, 4).size(), 4u);
  EXPECT_EQ((*image)->Bytes(0, 4)[1], 'E');
  EXPECT_TRUE((*image)->Bytes((*image)->size(), 1).empty());
}

}  // namespace
}  // namespace nativeprof::module
