#include "symbolize/compressed_sections.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolize/elf_file.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::ReadFileOrEmpty;
using ::nativeprof::testing::TargetPath;

std::string ZstdImage() {
  if (!std::filesystem::exists(TargetPath("sym_prog_zstd"))) return "";
  return ReadFileOrEmpty(TargetPath("sym_prog_zstd"));
}

TEST(CompressedSectionsTest, DecompressedImageReadsLikeTheUncompressedOne) {
  std::string image = ZstdImage();
  if (image.empty()) GTEST_SKIP() << "objcopy here cannot write zstd sections";
  ASSERT_TRUE(HasCompressedSections(image, kZstdSections));
  NP_ASSERT_OK_AND_ASSIGN(std::string plain, DecompressSections(image, 1 << 30, kZstdSections));
  EXPECT_FALSE(HasCompressedSections(plain, kZstdSections));
  NP_ASSERT_OK_AND_ASSIGN(auto rewritten, ElfFile::FromBytes(plain, "rewritten"));
  NP_ASSERT_OK_AND_ASSIGN(auto reference, ElfFile::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view a, rewritten->SectionData(".debug_info"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view b, reference->SectionData(".debug_info"));
  EXPECT_EQ(std::string(a), std::string(b));
}

TEST(CompressedSectionsTest, CorruptFrameIsDataLossAndSizeCapLeavesSectionsAlone) {
  std::string image = ZstdImage();
  if (image.empty()) GTEST_SKIP() << "objcopy here cannot write zstd sections";
  // A cap below every section's size leaves the image as it was.
  NP_ASSERT_OK_AND_ASSIGN(std::string capped, DecompressSections(image, 1, kZstdSections));
  EXPECT_EQ(capped, image);
  // Overwrite the start of .debug_info's zstd frame (just after its Elf64_Chdr).
  Elf* elf = elf_memory(image.data(), image.size());
  ASSERT_NE(elf, nullptr);
  size_t shstrndx = 0;
  ASSERT_EQ(elf_getshdrstrndx(elf, &shstrndx), 0);
  uint64_t payload_at = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    gelf_getshdr(scn, &shdr);
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name != nullptr && std::string(name) == ".debug_info") {
      payload_at = shdr.sh_offset + sizeof(Elf64_Chdr);
    }
  }
  elf_end(elf);
  ASSERT_NE(payload_at, 0u);
  std::string bad = image;
  for (size_t i = 0; i < 8; ++i) bad[payload_at + i] = 0;
  absl::StatusOr<std::string> r = DecompressSections(bad, 1 << 30, kZstdSections);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
}

TEST(CompressedSectionsTest, ZlibSectionsAreDecompressedOnlyWhenAsked) {
  std::string image = ReadFileOrEmpty(TargetPath("sym_prog_zlib"));
  ASSERT_FALSE(image.empty());
  ASSERT_TRUE(HasCompressedSections(image, kZlibSections));
  EXPECT_FALSE(HasCompressedSections(image, kZstdSections));
  NP_ASSERT_OK_AND_ASSIGN(std::string untouched, DecompressSections(image, 1 << 30, kZstdSections));
  EXPECT_EQ(untouched, image);
  NP_ASSERT_OK_AND_ASSIGN(std::string plain,
                          DecompressSections(image, 1 << 30, kAllCompressedSections));
  EXPECT_FALSE(HasCompressedSections(plain, kAllCompressedSections));
  // The decompressed DWARF is the uncompressed build's DWARF, byte for byte.
  NP_ASSERT_OK_AND_ASSIGN(auto original, ElfFile::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(auto rewritten, ElfFile::FromBytes(plain, "plain"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view want, original->SectionData(".debug_info"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view got, rewritten->SectionData(".debug_info"));
  EXPECT_EQ(got, want);

  // A corrupt zlib stream is data loss, not a crash or a silently bad image.
  GElf_Shdr shdr;
  NP_ASSERT_OK_AND_ASSIGN(auto zlib, ElfFile::Open(TargetPath("sym_prog_zlib")));
  ASSERT_NE(zlib->FindSection(".debug_info", &shdr), nullptr);
  std::string bad = image;
  for (size_t i = 0; i < 16; ++i) bad[shdr.sh_offset + sizeof(Elf64_Chdr) + 2 + i] ^= 0x5a;
  EXPECT_TRUE(absl::IsDataLoss(DecompressSections(bad, 1 << 30, kZlibSections).status()));
}

TEST(CompressedSectionsTest, OmittedSectionsAreNeitherFoundNorDecompressed) {
  std::string image = ReadFileOrEmpty(TargetPath("sym_prog_zlib"));
  ASSERT_FALSE(image.empty());
  NP_ASSERT_OK_AND_ASSIGN(
      std::string all, CompactDecompressedImage(image, 1 << 30, kAllCompressedSections));
  NP_ASSERT_OK_AND_ASSIGN(
      std::string some,
      CompactDecompressedImage(image, 1 << 30, kAllCompressedSections,
                               {".debug_loclists", ".debug_loc", ".no_such_section"}));
  NP_ASSERT_OK_AND_ASSIGN(auto full, ElfFile::FromBytes(all, "all"));
  NP_ASSERT_OK_AND_ASSIGN(auto trimmed, ElfFile::FromBytes(some, "some"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view loclists, full->SectionData(".debug_loclists"));
  EXPECT_EQ(trimmed->FindSection(".debug_loclists", nullptr), nullptr);
  // That section's bytes fewer, give or take the alignment padding around it.
  EXPECT_NEAR(static_cast<double>(all.size() - some.size()), static_cast<double>(loclists.size()),
              16.0);
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view info, trimmed->SectionData(".debug_info"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view want, full->SectionData(".debug_info"));
  EXPECT_EQ(info, want);
}

TEST(CompressedSectionsTest, CompactImageHoldsEverySectionPlainAndNothingElse) {
  std::string image = ReadFileOrEmpty(TargetPath("sym_prog_zlib"));
  ASSERT_FALSE(image.empty());
  NP_ASSERT_OK_AND_ASSIGN(std::string compact,
                          CompactDecompressedImage(image, 1 << 30, kAllCompressedSections));
  EXPECT_FALSE(HasCompressedSections(compact, kAllCompressedSections));
  NP_ASSERT_OK_AND_ASSIGN(auto original, ElfFile::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(auto rewritten, ElfFile::FromBytes(compact, "compact"));
  EXPECT_TRUE(rewritten->loads().empty());  // no program headers
  EXPECT_EQ(rewritten->build_id(), original->build_id());  // from the .note section
  for (const char* name : {".debug_info", ".debug_line", ".debug_str", ".symtab", ".text"}) {
    SCOPED_TRACE(name);
    NP_ASSERT_OK_AND_ASSIGN(absl::string_view want, original->SectionData(name));
    NP_ASSERT_OK_AND_ASSIGN(absl::string_view got, rewritten->SectionData(name));
    EXPECT_EQ(got, want);
  }
  // Plain DWARF plus the code: smaller than the compressed file plus its inflated copy would be.
  EXPECT_LT(compact.size(), image.size() + original->size() / 2);

  GElf_Shdr shdr;
  NP_ASSERT_OK_AND_ASSIGN(auto zlib, ElfFile::Open(TargetPath("sym_prog_zlib")));
  ASSERT_NE(zlib->FindSection(".debug_info", &shdr), nullptr);
  std::string bad = image;
  for (size_t i = 0; i < 16; ++i) bad[shdr.sh_offset + sizeof(Elf64_Chdr) + 2 + i] ^= 0x5a;
  EXPECT_TRUE(absl::IsDataLoss(CompactDecompressedImage(bad, 1 << 30, kZlibSections).status()));
  EXPECT_TRUE(absl::IsDataLoss(CompactDecompressedImage("junk", 1 << 30, kZlibSections).status()));
}

TEST(CompressedSectionsTest, NonElfInputIsRejectedNotCrashed) {
  EXPECT_FALSE(HasCompressedSections("not an elf file at all", kZstdSections));
  EXPECT_TRUE(absl::IsDataLoss(DecompressSections("\x7f" "ELF", 1 << 20, kZstdSections).status()));
  EXPECT_FALSE(HasCompressedSections(std::string(64, '\0'), kZstdSections));
}

}  // namespace
}  // namespace nativeprof::symbolize
