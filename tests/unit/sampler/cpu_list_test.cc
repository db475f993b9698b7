#include "sampler/cpu_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::sampler {
namespace {

using ::testing::ElementsAre;

TEST(CpuListTest, ParsesRangesAndSingles) {
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList("0-3,5");
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 3, 5));
  cpus = ParseCpuList("7\n");  // as read from sysfs
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  EXPECT_THAT(*cpus, ElementsAre(7));
  cpus = ParseCpuList("0,2-3,8-9");
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  EXPECT_THAT(*cpus, ElementsAre(0, 2, 3, 8, 9));
  cpus = ParseCpuList("4-4");
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  EXPECT_THAT(*cpus, ElementsAre(4));
}

TEST(CpuListTest, RejectsBadInput) {
  for (const char* bad : {"", "\n", ",", "x", "1-x", "3-1", "-1", "1,,a", "0-99999", "1.5",
                          "0-3-5", "1--2", "0-"}) {
    absl::StatusOr<std::vector<int>> cpus = ParseCpuList(bad);
    EXPECT_FALSE(cpus.ok()) << "'" << bad << "' parsed";
    if (!cpus.ok()) EXPECT_EQ(cpus.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CpuListTest, OnlineCpusIsNonEmptyAndSorted) {
  std::vector<int> cpus = OnlineCpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  EXPECT_GE(cpus.front(), 0);
}

}  // namespace
}  // namespace nativeprof::sampler
