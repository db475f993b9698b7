// The decompressed-debug-file cache: built once per build-id, reused, rebuilt when damaged, and
// giving the same inline frames as libdw's own decompression.
#include "module/debug_file_cache.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/compressed_sections.h"
#include "symbolize/dwarf_info.h"
#include "tests/testing/test_support.h"

namespace nativeprof::module {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::ReadFileOrEmpty;
using ::nativeprof::testing::TargetPath;
// The cache's promise is that DWARF reads alike from the copy: checked with symbolize's reader.
using ::nativeprof::symbolize::DwarfFrame;
using ::nativeprof::symbolize::DwarfInfo;

ino_t InodeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// Every function name DWARF gives for the first `span` bytes of .text, in order.
std::vector<std::string> DescribeText(DwarfInfo& dwarf, const ElfImage& elf, uint64_t span) {
  GElf_Shdr text;
  std::vector<std::string> names;
  if (elf.FindSection(".text", &text) == nullptr) return names;
  for (uint64_t a = text.sh_addr; a < text.sh_addr + std::min(span, text.sh_size); a += 3) {
    std::vector<DwarfFrame> frames;
    if (!dwarf.Describe(a, /*inline_frames=*/true, /*full_names=*/false, &frames)) continue;
    for (const DwarfFrame& f : frames) names.push_back(f.function);
  }
  return names;
}

TEST(DebugFileCacheTest, CompressedDwarfIsDecompressedOnceAndReadAlike) {
  NP_ASSERT_OK_AND_ASSIGN(auto zlib, ElfImage::Open(TargetPath("sym_prog_zlib")));
  ASSERT_TRUE(zlib->HasCompressedSection(".debug_info"));
  ASSERT_FALSE(zlib->build_id().empty());
  CacheDir cache(MakeTempDir());
  const std::string entry = cache.PathOf("debug", zlib->build_id() + ".debug");

  std::unique_ptr<ElfImage> plain = OpenDecompressedDebugFile(*zlib, cache);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->HasCompressedSection(".debug_info"));
  EXPECT_EQ(plain->build_id(), zlib->build_id());
  ASSERT_TRUE(std::filesystem::exists(entry));
  EXPECT_FALSE(HasCompressedSections(ReadFileOrEmpty(entry), kAllCompressedSections));
  EXPECT_EQ(plain->FindSection(".debug_loclists", nullptr), nullptr);  // not needed, not inflated
  const ino_t built = InodeOf(entry);

  // A second open reuses the entry rather than rewriting it.
  std::unique_ptr<ElfImage> again = OpenDecompressedDebugFile(*zlib, cache);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->name(), entry);
  EXPECT_EQ(InodeOf(entry), built);

  // Same inline frames and names as libdw reading the compressed original itself (which inflates
  // the sections of `zlib` in place, so this comes last).
  auto direct = DwarfInfo::Open(*zlib);
  auto cached = DwarfInfo::Open(*again);
  ASSERT_NE(direct, nullptr);
  ASSERT_NE(cached, nullptr);
  std::vector<std::string> want = DescribeText(*direct, *zlib, 4096);
  EXPECT_THAT(want, ::testing::Contains("symtest::InlinedHelper"));
  EXPECT_EQ(DescribeText(*cached, *again, 4096), want);
}

TEST(DebugFileCacheTest, DamagedOrForeignEntryIsRebuilt) {
  NP_ASSERT_OK_AND_ASSIGN(auto zlib, ElfImage::Open(TargetPath("sym_prog_zlib")));
  CacheDir cache(MakeTempDir());
  ASSERT_NE(OpenDecompressedDebugFile(*zlib, cache), nullptr);
  const std::string entry = cache.PathOf("debug", zlib->build_id() + ".debug");
  const std::string good = ReadFileOrEmpty(entry);

  // Truncated, not ELF, and another build's image under this build-id's name: all rebuilt.
  const std::string other = ReadFileOrEmpty(TargetPath("sym_prog_O0"));
  for (const std::string& bad : {good.substr(0, good.size() / 3), std::string("not elf"), other}) {
    std::ofstream(entry, std::ios::trunc | std::ios::binary) << bad;
    std::unique_ptr<ElfImage> rebuilt = OpenDecompressedDebugFile(*zlib, cache);
    ASSERT_NE(rebuilt, nullptr);
    EXPECT_EQ(rebuilt->build_id(), zlib->build_id());
    EXPECT_EQ(ReadFileOrEmpty(entry), good);
  }
}

TEST(DebugFileCacheTest, NothingToDoForUncompressedDwarf) {
  NP_ASSERT_OK_AND_ASSIGN(auto elf, ElfImage::Open(TargetPath("sym_prog")));
  CacheDir cache(MakeTempDir());
  EXPECT_EQ(OpenDecompressedDebugFile(*elf, cache), nullptr);
  EXPECT_FALSE(std::filesystem::exists(cache.root() + "/debug"));
}

TEST(DebugFileCacheTest, UnwritableCacheStillGivesADecompressedImage) {
  NP_ASSERT_OK_AND_ASSIGN(auto zlib, ElfImage::Open(TargetPath("sym_prog_zlib")));
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/file") << "x";
  CacheDir cache(dir + "/file/below");  // cannot be created
  std::unique_ptr<ElfImage> plain = OpenDecompressedDebugFile(*zlib, cache);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->HasCompressedSection(".debug_info"));
}

}  // namespace
}  // namespace nativeprof::module
