// perf map parsing on what anyone can write to /tmp/perf-PID.map: sizes and names beyond any JIT,
// ranges past the end of the address space, and files too large to read.
#include "symbolize/perf_map.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::MakeTempDir;

std::string NameAt(const SymbolTable& table, uint64_t avma) {
  const SymbolTable::Symbol* s = table.Lookup(avma);
  return s == nullptr ? "" : std::string(table.Name(*s));
}

TEST(ParsePerfMapTest, SkipsSizesAndRangesNoJitCanHave) {
  const std::string text =
      "1000 100 good\n"
      "2000 40000001 over_a_gib\n"              // 1 GiB + 1
      "3000 ffffffffffffffff everything_after\n"
      "ffffffffffffff00 100 up_to_the_end\n"    // ends exactly at 2^64
      "fffffffffffffe00 201 past_the_end\n"     // would wrap
      "4000 0 empty\n"
      "5000 40000000 one_gib\n";
  SymbolTable table = ParsePerfMap(text);
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(NameAt(table, 0x1080), "good");
  EXPECT_EQ(NameAt(table, 0x2000), "");
  EXPECT_EQ(NameAt(table, 0x3000), "");
  EXPECT_EQ(NameAt(table, 0xffffffffffffffff), "up_to_the_end");
  EXPECT_EQ(NameAt(table, 0xfffffffffffffe00), "");
  EXPECT_EQ(NameAt(table, 0x5000 + 0x3fffffff), "one_gib");
}

TEST(ParsePerfMapTest, SkipsNamesLongerThanTheLimit) {
  const std::string longest(kMaxPerfMapNameBytes, 'n');
  const std::string text = "1000 10 " + longest + "\n2000 10 " + longest + "x\n3000 10 short\n";
  SymbolTable table = ParsePerfMap(text);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(NameAt(table, 0x1000), longest);
  EXPECT_EQ(NameAt(table, 0x2000), "");
  EXPECT_EQ(NameAt(table, 0x3000), "short");
}

TEST(LoadPerfMapTest, FileLargerThanTheLimitIsRefusedUnread) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/perf-77.map";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kMaxPerfMapFileBytes) + 1), 0);  // sparse
  ::close(fd);
  absl::StatusOr<SymbolTable> table = LoadPerfMap(77, dir);
  EXPECT_TRUE(absl::IsResourceExhausted(table.status())) << table.status();
}

}  // namespace
}  // namespace nativeprof::symbolize
