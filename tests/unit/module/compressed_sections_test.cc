#include "module/compressed_sections.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "tests/testing/test_support.h"

namespace nativeprof::module {
namespace {

using ::nativeprof::testing::ReadFileOrEmpty;
using ::nativeprof::testing::TargetPath;
using ::nativeprof::testing::SourcePath;

std::string ZstdImage() {
  if (!std::filesystem::exists(TargetPath("sym_prog_zstd"))) return "";
  return ReadFileOrEmpty(TargetPath("sym_prog_zstd"));
}

TEST(CompressedSectionsTest, DecompressedImageReadsLikeTheUncompressedOne) {
  std::string image = ZstdImage();
  if (image.empty()) GTEST_SKIP() << "objcopy here cannot write zstd sections";
  ASSERT_TRUE(HasCompressedSections(image, kZstdSections));
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage rewrite, DecompressSections(image, 1 << 30, kZstdSections));
  EXPECT_THAT(rewrite.skipped, ::testing::IsEmpty());
  const std::string& plain = rewrite.bytes;
  EXPECT_FALSE(HasCompressedSections(plain, kZstdSections));
  NP_ASSERT_OK_AND_ASSIGN(auto rewritten, ElfImage::FromBytes(plain, "rewritten"));
  NP_ASSERT_OK_AND_ASSIGN(auto reference, ElfImage::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view a, rewritten->SectionData(".debug_info"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view b, reference->SectionData(".debug_info"));
  EXPECT_EQ(std::string(a), std::string(b));
}

// Offset of the payload (just after its Elf64_Chdr) of section `name` in `image`; 0 when absent.
uint64_t PayloadOffset(std::string& image, const std::string& name) {
  Elf* elf = elf_memory(image.data(), image.size());
  if (elf == nullptr) return 0;
  size_t shstrndx = 0;
  uint64_t payload_at = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      gelf_getshdr(scn, &shdr);
      const char* sname = elf_strptr(elf, shstrndx, shdr.sh_name);
      if (sname != nullptr && sname == name) payload_at = shdr.sh_offset + sizeof(Elf64_Chdr);
    }
  }
  elf_end(elf);
  return payload_at;
}

TEST(CompressedSectionsTest, CorruptFrameAndSizeCapSkipOnlyTheirSection) {
  std::string image = ZstdImage();
  if (image.empty()) GTEST_SKIP() << "objcopy here cannot write zstd sections";
  // A cap below every section's size leaves every compressed section out, each with its reason.
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage capped, DecompressSections(image, 1, kZstdSections));
  EXPECT_FALSE(HasCompressedSections(capped.bytes, kZstdSections));
  ASSERT_THAT(capped.skipped, ::testing::Not(::testing::IsEmpty()));
  EXPECT_THAT(capped.skipped[0].reason, ::testing::HasSubstr("-byte limit for one section"));

  // Overwrite the start of .debug_info's zstd frame: that section alone is left out.
  const uint64_t payload_at = PayloadOffset(image, ".debug_info");
  ASSERT_NE(payload_at, 0u);
  std::string bad = image;
  for (size_t i = 0; i < 8; ++i) bad[payload_at + i] = 0;
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage r, DecompressSections(bad, 1 << 30, kZstdSections));
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].name, ".debug_info");
  EXPECT_THAT(r.skipped[0].reason, ::testing::HasSubstr("corrupt"));
  NP_ASSERT_OK_AND_ASSIGN(auto elf, ElfImage::FromBytes(bad, "bad.debug"));
  EXPECT_THAT(elf->skipped_sections(),
              ::testing::ElementsAre(::testing::StartsWith("section .debug_info of bad.debug ")));
  EXPECT_FALSE(elf->HasSectionData(".debug_info"));
  NP_ASSERT_OK_AND_ASSIGN(auto reference, ElfImage::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view want, reference->SectionData(".debug_line"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view got, elf->SectionData(".debug_line"));
  EXPECT_EQ(got, want);
}

TEST(CompressedSectionsTest, ZlibSectionsAreDecompressedOnlyWhenAsked) {
  std::string image = ReadFileOrEmpty(TargetPath("sym_prog_zlib"));
  ASSERT_FALSE(image.empty());
  ASSERT_TRUE(HasCompressedSections(image, kZlibSections));
  EXPECT_FALSE(HasCompressedSections(image, kZstdSections));
  EXPECT_FALSE(NeedsDecompressing(image, kZstdSections, 1 << 30));
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage untouched,
                          DecompressSections(image, 1 << 30, kZstdSections));
  EXPECT_EQ(untouched.bytes, image);
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage rewrite,
                          DecompressSections(image, 1 << 30, kAllCompressedSections));
  const std::string& plain = rewrite.bytes;
  EXPECT_FALSE(HasCompressedSections(plain, kAllCompressedSections));
  // The decompressed DWARF is the uncompressed build's DWARF, byte for byte.
  NP_ASSERT_OK_AND_ASSIGN(auto original, ElfImage::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(auto rewritten, ElfImage::FromBytes(plain, "plain"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view want, original->SectionData(".debug_info"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view got, rewritten->SectionData(".debug_info"));
  EXPECT_EQ(got, want);

  // A corrupt zlib stream leaves its section out with the reason, not a crash or a bad image.
  std::string bad = image;
  const uint64_t payload_at = PayloadOffset(image, ".debug_info");
  ASSERT_NE(payload_at, 0u);
  for (size_t i = 0; i < 16; ++i) bad[payload_at + 2 + i] ^= 0x5a;
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage r, DecompressSections(bad, 1 << 30, kZlibSections));
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].name, ".debug_info");
  EXPECT_THAT(r.skipped[0].reason, ::testing::AnyOf(::testing::HasSubstr("corrupt zlib data"),
                                                     ::testing::HasSubstr("another size")));
}

// A compressed section claiming far more than its payload can inflate to is left out before any
// buffer is sized from the claim, and the rest of the file still serves.
TEST(CompressedSectionsTest, ClaimBeyondWhatThePayloadCanHoldIsSkipped) {
  std::string image = ReadFileOrEmpty(TargetPath("sym_prog_zlib"));
  ASSERT_FALSE(image.empty());
  const uint64_t payload_at = PayloadOffset(image, ".debug_info");
  ASSERT_NE(payload_at, 0u);
  Elf64_Chdr chdr;
  std::memcpy(&chdr, image.data() + payload_at - sizeof(chdr), sizeof(chdr));
  chdr.ch_size = uint64_t{1} << 31;
  std::memcpy(image.data() + payload_at - sizeof(chdr), &chdr, sizeof(chdr));

  ASSERT_TRUE(NeedsDecompressing(image, kZstdSections, 1 << 30));
  for (bool compact : {false, true}) {
    SCOPED_TRACE(compact);
    NP_ASSERT_OK_AND_ASSIGN(
        RewrittenImage r, compact ? CompactDecompressedImage(image, 1 << 30, kAllCompressedSections)
                                  : DecompressSections(image, 1 << 30, kAllCompressedSections));
    ASSERT_EQ(r.skipped.size(), 1u);
    EXPECT_EQ(r.skipped[0].name, ".debug_info");
    EXPECT_THAT(r.skipped[0].reason,
                ::testing::MatchesRegex("claims 2147483648 bytes from [0-9]+ compressed: corrupt"));
    EXPECT_LT(r.bytes.size(), 4 * image.size());  // the other sections inflated, nothing more
  }
  NP_ASSERT_OK_AND_ASSIGN(auto elf, ElfImage::FromBytes(image, "hostile.debug"));
  EXPECT_THAT(elf->skipped_sections(),
              ::testing::ElementsAre(::testing::MatchesRegex(
                  "section .debug_info of hostile.debug claims 2147483648 bytes from [0-9]+ "
                  "compressed: corrupt, skipped")));
  EXPECT_FALSE(elf->HasSectionData(".debug_info"));
  NP_ASSERT_OK_AND_ASSIGN(auto reference, ElfImage::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view want, reference->SectionData(".debug_line"));
  NP_ASSERT_OK_AND_ASSIGN(absl::string_view got, elf->SectionData(".debug_line"));
  EXPECT_EQ(got, want);
}

// The libFuzzer finding of issue 15 (a ~2 GiB claim in a 6.7 KB file): refused with its reason.
TEST(CompressedSectionsTest, FuzzFindingOfAHugeClaimIsSkipped) {
  const std::string image = ReadFileOrEmpty(
      SourcePath("tests/fuzz/corpus/elf_loader_fuzzer/regress-oom-compressed-section"));
  ASSERT_EQ(image.size(), 6737u);
  NP_ASSERT_OK_AND_ASSIGN(auto elf, ElfImage::FromBytes(image, "finding"));
  EXPECT_THAT(elf->skipped_sections(),
              ::testing::ElementsAre(::testing::MatchesRegex(
                  "section \\[11\\] of finding .*: corrupt, skipped")));
  EXPECT_LT(elf->size(), image.size() + 4096);
}

// Every input that once failed the ELF loader fuzzer loads (or is refused) within a bounded size.
TEST(CompressedSectionsTest, FuzzRegressionInputsLoadWithinBounds) {
  const std::string dir = SourcePath("tests/fuzz/corpus/elf_loader_fuzzer");
  size_t replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("regress", 0) != 0) continue;
    SCOPED_TRACE(entry.path().string());
    const std::string image = ReadFileOrEmpty(entry.path().string());
    ++replayed;
    if (auto elf = ElfImage::FromBytes(image, "regress"); elf.ok()) {
      EXPECT_LT((*elf)->size(), image.size() + (1u << 20));
    }
    if (auto compact = CompactDecompressedImage(image, 1 << 20, kAllCompressedSections);
        compact.ok()) {
      EXPECT_LT(compact->bytes.size(), image.size() + 4 * (1u << 20));
    }
  }
  EXPECT_GE(replayed, 3u);
}

TEST(CompressedSectionsTest, SizeProblemsAreBoundedByWhatThePayloadCanHold) {
  const std::string payload(100, 'x');
  EXPECT_EQ(CompressedSizeProblem(ELFCOMPRESS_ZLIB, payload, 100 * 1032, 1 << 30), "");
  EXPECT_EQ(CompressedSizeProblem(ELFCOMPRESS_ZLIB, payload, 1u << 20, 1 << 30),
            "claims 1048576 bytes from 100 compressed: corrupt");
  EXPECT_EQ(CompressedSizeProblem(ELFCOMPRESS_ZLIB, payload, 50000, 4096),
            "claims 50000 bytes, more than the 4096-byte limit for one section");
  EXPECT_EQ(CompressedSizeProblem(2 /* ELFCOMPRESS_ZSTD */, payload, 10, 1 << 30),
            "holds no valid zstd frames: corrupt");
  EXPECT_EQ(CompressedSizeProblem(7, payload, 10, 1 << 30), "uses unknown compression type 7");
}

TEST(CompressedSectionsTest, OmittedSectionsAreNeitherFoundNorDecompressed) {
  std::string image = ReadFileOrEmpty(TargetPath("sym_prog_zlib"));
  ASSERT_FALSE(image.empty());
  NP_ASSERT_OK_AND_ASSIGN(
      RewrittenImage all_rewrite,
      CompactDecompressedImage(image, 1 << 30, kAllCompressedSections));
  NP_ASSERT_OK_AND_ASSIGN(
      RewrittenImage some_rewrite,
      CompactDecompressedImage(image, 1 << 30, kAllCompressedSections,
                               {".debug_loclists", ".debug_loc", ".no_such_section"}));
  const std::string& all = all_rewrite.bytes;
  const std::string& some = some_rewrite.bytes;
  NP_ASSERT_OK_AND_ASSIGN(auto full, ElfImage::FromBytes(all, "all"));
  NP_ASSERT_OK_AND_ASSIGN(auto trimmed, ElfImage::FromBytes(some, "some"));
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
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage rewrite,
                          CompactDecompressedImage(image, 1 << 30, kAllCompressedSections));
  EXPECT_THAT(rewrite.skipped, ::testing::IsEmpty());
  const std::string& compact = rewrite.bytes;
  EXPECT_FALSE(HasCompressedSections(compact, kAllCompressedSections));
  NP_ASSERT_OK_AND_ASSIGN(auto original, ElfImage::Open(TargetPath("sym_prog")));
  NP_ASSERT_OK_AND_ASSIGN(auto rewritten, ElfImage::FromBytes(compact, "compact"));
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

  std::string bad = image;
  const uint64_t payload_at = PayloadOffset(image, ".debug_info");
  ASSERT_NE(payload_at, 0u);
  for (size_t i = 0; i < 16; ++i) bad[payload_at + 2 + i] ^= 0x5a;
  NP_ASSERT_OK_AND_ASSIGN(RewrittenImage r, CompactDecompressedImage(bad, 1 << 30, kZlibSections));
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].name, ".debug_info");
  EXPECT_TRUE(absl::IsDataLoss(CompactDecompressedImage("junk", 1 << 30, kZlibSections).status()));
}

TEST(CompressedSectionsTest, NonElfInputIsRejectedNotCrashed) {
  EXPECT_FALSE(HasCompressedSections("not an elf file at all", kZstdSections));
  EXPECT_TRUE(absl::IsDataLoss(DecompressSections("\x7f" "ELF", 1 << 20, kZstdSections).status()));
  EXPECT_FALSE(HasCompressedSections(std::string(64, '\0'), kZstdSections));
}

}  // namespace
}  // namespace nativeprof::module
