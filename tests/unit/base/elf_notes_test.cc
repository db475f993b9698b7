#include "base/elf_notes.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace nativeprof {
namespace {

std::string Note(uint32_t type, const std::string& name, const std::string& desc, bool pad_desc) {
  auto pad = [](std::string s) {
    while (s.size() % 4 != 0) s.push_back('\0');
    return s;
  };
  uint32_t header[3] = {static_cast<uint32_t>(name.size()), static_cast<uint32_t>(desc.size()),
                        type};
  std::string out(reinterpret_cast<const char*>(header), sizeof(header));
  out += pad(name);
  out += pad_desc ? pad(desc) : desc;
  return out;
}

const std::string kGnu("GNU\0", 4);
const std::string kId = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14";

TEST(ElfNotesTest, FindsTheBuildIdAfterOtherNotes) {
  std::string notes = Note(NT_GNU_ABI_TAG, kGnu, std::string(16, '\0'), true) +
                      Note(NT_GNU_PROPERTY_TYPE_0, kGnu, std::string(12, 'p'), true) +
                      Note(NT_GNU_BUILD_ID, kGnu, kId, true);
  EXPECT_EQ(FindGnuBuildId(notes), kId);
}

TEST(ElfNotesTest, LastNoteWithoutPaddingStillCounts) {
  EXPECT_EQ(FindGnuBuildId(Note(NT_GNU_BUILD_ID, kGnu, "abcde", false)), "abcde");
}

TEST(ElfNotesTest, WrongOwnerOrTypeOrSizeIsNotABuildId) {
  EXPECT_EQ(FindGnuBuildId(Note(NT_GNU_BUILD_ID, std::string("XYZ\0", 4), kId, true)), "");
  EXPECT_EQ(FindGnuBuildId(Note(NT_GNU_ABI_TAG, kGnu, kId, true)), "");
  EXPECT_EQ(FindGnuBuildId(Note(NT_GNU_BUILD_ID, kGnu, "", true)), "");
  EXPECT_EQ(FindGnuBuildId(Note(NT_GNU_BUILD_ID, kGnu, std::string(65, 'x'), true)), "");
}

TEST(ElfNotesTest, TruncatedOrLyingHeadersAreRejectedWithoutOverreading) {
  std::string good = Note(NT_GNU_BUILD_ID, kGnu, kId, true);
  for (size_t cut = 0; cut + 1 < 12 + 4 + kId.size(); ++cut) {
    EXPECT_EQ(FindGnuBuildId(good.substr(0, cut)), "") << cut;
  }
  std::string huge = good;
  uint32_t big = 0xfffffff0u;
  std::memcpy(huge.data(), &big, 4);  // namesz
  EXPECT_EQ(FindGnuBuildId(huge), "");
  huge = good;
  std::memcpy(huge.data() + 4, &big, 4);  // descsz
  EXPECT_EQ(FindGnuBuildId(huge), "");
}

}  // namespace
}  // namespace nativeprof
