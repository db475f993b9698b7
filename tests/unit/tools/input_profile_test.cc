#include "tools/input_profile.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "base/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "output/folded_writer.h"
#include "tests/testing/test_support.h"

namespace nativeprof::tools {
namespace {

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// (leaf name, off_cpu) -> microseconds, over every stack of `p`.
std::map<std::pair<std::string, bool>, uint64_t> ByLeaf(const symbolize::Profile& p) {
  std::map<std::pair<std::string, bool>, uint64_t> out;
  for (const symbolize::ProfileStack& s : p.stacks) {
    EXPECT_EQ(s.weight, s.samples * 1000);
    out[{p.frames[s.frames.back()].function, s.off_cpu}] += s.samples;
  }
  return out;
}

class WallViewTest : public ::testing::Test {
 protected:
  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/" + name, text).ok());
  }
  symbolize::Profile Read(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::optional<symbolize::Profile> p = ReadInputProfile(path, "");
    EXPECT_TRUE(p.has_value());
    if (!p.has_value()) return {};
    MarkRecordedView(path, "wall", &*p);
    return *std::move(p);
  }

  const std::string dir_ = testing::MakeTempDir();
  static constexpr char kWall[] =
      "app;main;compute 500\n"              // CPU only
      "app;main;read;schedule_[k] 3000\n"   // off-CPU only
      "app;main;lock;[waiting for CPU] 40\n"  // 30 us off-CPU (a preemption), 10 us on a CPU
      "worker;run;sleep 7\n";               // 8 us off-CPU by the off-CPU view's rounding
  static constexpr char kOffCpu[] =
      "app;main;read;schedule_[k] 3000\n"
      "app;main;lock;[waiting for CPU] 30\n"
      "worker;run;sleep 8\n"
      "app;gone 5\n";  // a line the wall view does not have: nothing to split
};

// Each line of X.wall.folded is split by what X.offcpu.folded gives the same line: the flame
// graph's wall palette and pprof's cpu / off_cpu sample types then see both halves.
TEST_F(WallViewTest, IsSplitByTheOffCpuViewBesideIt) {
  Write("x.wall.folded", kWall);
  Write("x.offcpu.folded", kOffCpu);
  const symbolize::Profile p = Read("x.wall.folded");
  EXPECT_EQ(p.event, "wall");
  EXPECT_EQ(p.count_unit, "us");
  EXPECT_THAT(ByLeaf(p), UnorderedElementsAre(Pair(Pair("compute", false), 500),
                                              Pair(Pair("schedule", true), 3000),
                                              Pair(Pair("[waiting for CPU]", true), 30),
                                              Pair(Pair("[waiting for CPU]", false), 10),
                                              Pair(Pair("sleep", true), 7)));
  // Written back as folded text, the halves are the lines they came from.
  EXPECT_EQ(output::RenderFolded(p),
            "app;main;compute 500\n"
            "app;main;lock;[waiting for CPU] 40\n"
            "app;main;read;schedule_[k] 3000\n"
            "worker;run;sleep 7\n");
}

TEST_F(WallViewTest, WithoutTheOffCpuViewEveryStackCountsAsCpu) {
  Write("y.wall.folded", kWall);
  const symbolize::Profile p = Read("y.wall.folded");
  for (const symbolize::ProfileStack& s : p.stacks) EXPECT_FALSE(s.off_cpu);
  EXPECT_EQ(p.stacks.size(), 4u);
}

}  // namespace
}  // namespace nativeprof::tools
