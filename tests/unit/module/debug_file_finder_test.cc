// The debug-file finder's .gnu_debuglink rule: the CRC-32 of the whole candidate must match the
// one the module records, else the candidate is skipped.
#include "module/debug_file_finder.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::module {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::TargetPath;
using ::testing::HasSubstr;

TEST(DebugFileFinderTest, DebugLinkCrcIsZlibsCrc32) {
  EXPECT_EQ(DebugLinkCrc("123456789"), 0xcbf43926u);  // the CRC-32 check value
  EXPECT_EQ(DebugLinkCrc(""), 0u);
}

TEST(DebugFileFinderTest, DebuglinkFoundWhenItsCrcMatches) {
  auto module = ElfImage::Open(TargetPath("sym_prog_stripped"));
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE((*module)->debug_link().has_value());
  auto found = FindDebugFile(**module, TargetPath("sym_prog_stripped"), /*debug_dirs=*/{});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->how, "debuglink");
  EXPECT_THAT(found->file->name(), HasSubstr("/.debug/sym_prog_stripped.debug"));
}

TEST(DebugFileFinderTest, DebuglinkWithWrongCrcIsSkipped) {
  const std::string dir = MakeTempDir();
  std::filesystem::create_directory(dir + "/.debug");
  const std::string copy = dir + "/sym_prog_stripped";
  std::filesystem::copy_file(TargetPath("sym_prog_stripped"), copy);
  const std::string debug = dir + "/.debug/sym_prog_stripped.debug";
  std::filesystem::copy_file(TargetPath(".debug/sym_prog_stripped.debug"), debug);
  {
    std::ofstream append(debug, std::ios::app | std::ios::binary);
    append << "changed";  // the CRC no longer matches
  }
  auto module = ElfImage::Open(copy);
  ASSERT_TRUE(module.ok()) << module.status();
  auto found = FindDebugFile(**module, copy, /*debug_dirs=*/{});
  EXPECT_TRUE(absl::IsNotFound(found.status())) << found.status();
  EXPECT_THAT(found.status().message(), HasSubstr(debug)) << "the skipped file is named as tried";
}

}  // namespace
}  // namespace nativeprof::module
