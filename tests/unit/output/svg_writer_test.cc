#include "output/svg_writer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "output/flame_tree.h"
#include "output/folded_reader.h"
#include "output/profile_writer.h"
#include "tests/testing/test_support.h"

namespace nativeprof::output {
namespace {

using symbolize::Profile;
using symbolize::ProfileFrameKind;
using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(FlameColorTest, DeterministicPerNameAndDistinctPerPalette) {
  EXPECT_EQ(FlameColor("compute", Palette::kUser), FlameColor("compute", Palette::kUser));
  EXPECT_NE(FlameColor("compute", Palette::kUser), FlameColor("parse", Palette::kUser));
  // The same name in the kernel / inlined / JIT palettes gets a different colour family.
  EXPECT_NE(FlameColor("f", Palette::kUser), FlameColor("f", Palette::kKernel));
  EXPECT_NE(FlameColor("f", Palette::kKernel), FlameColor("f", Palette::kInlined));
  EXPECT_NE(FlameColor("f", Palette::kInlined), FlameColor("f", Palette::kJit));
  // A fixed value: colours must not change between runs or builds.
  EXPECT_EQ(FlameColor("main", Palette::kUser), FlameColor("main", Palette::kUser));
  EXPECT_THAT(FlameColor("main", Palette::kUser), ::testing::StartsWith("rgb("));
}

TEST(SvgWriterTest, FramesTitlesEscapingAndPalettes) {
  NP_ASSERT_OK_AND_ASSIGN(Profile p,
                          ParseFolded("a&b;main;operator<<(x);sys_[k] 3\na&b;main;jit_[j] 1\n"));
  FlameSvgStats stats;
  NP_ASSERT_OK_AND_ASSIGN(std::string svg, RenderProfileSvg(p, "T<1>", false, 1200, 0.1, &stats));
  EXPECT_THAT(svg, HasSubstr("<text class=\"title\" x=\"600\" y=\"24\">T&lt;1&gt;</text>"));
  EXPECT_THAT(svg, HasSubstr("<title>operator&lt;&lt;(x) (3 samples, 75.00%)</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>a&amp;b (4 samples, 100.00%)</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>sys_[k] (3 samples, 75.00%)</title>"));
  EXPECT_THAT(svg, HasSubstr(FlameColor("sys_[k]", Palette::kKernel)));
  EXPECT_THAT(svg, HasSubstr(FlameColor("jit_[j]", Palette::kJit)));
  EXPECT_EQ(stats.frames_drawn, 6u);  // all, a&b, main, operator<<, sys, jit
  EXPECT_EQ(stats.frames_pruned, 0u);
  EXPECT_THAT(svg, HasSubstr("0 frames narrower than 0.1 px pruned"));
  // Self-contained: nothing is fetched (namespace URIs are names, not fetches).
  EXPECT_THAT(svg, Not(HasSubstr("src=")));
  EXPECT_THAT(svg, Not(HasSubstr("href")));
  EXPECT_THAT(svg, Not(HasSubstr("url(")));
  EXPECT_THAT(svg, Not(HasSubstr("@import")));
}

TEST(SvgWriterTest, PrunesFramesNarrowerThanMinWidthAndSaysHowMany) {
  std::string folded = "app;main;big 1000000\n";
  for (int i = 0; i < 1000; ++i) absl::StrAppend(&folded, "app;main;small_", i, ";leaf 1\n");
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded(folded));
  FlameSvgStats stats;
  NP_ASSERT_OK_AND_ASSIGN(std::string svg, RenderProfileSvg(p, "", false, 1200, 0.1, &stats));
  // Each small_i is 1/1001000 of 1180 px = 0.001 px: it and its leaf are pruned.
  EXPECT_EQ(stats.frames_pruned, 2000u);
  EXPECT_EQ(stats.frames_drawn, 4u);
  EXPECT_THAT(svg, HasSubstr("2,000 frames narrower than 0.1 px pruned"));
  EXPECT_EQ(Count(svg, "<g><title>"), 4u);
}

TEST(SvgWriterTest, FlameChartKeepsTimeOrderAndNeedsATimeline) {
  Profile p;
  p.frames = {{"main", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"a", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"b", ProfileFrameKind::kUser, "", "", 0, "", 0}};
  p.stacks = {{"t", 1, 1, {0, 1}, 2, 2}, {"t", 1, 1, {0, 2}, 1, 1}};
  absl::StatusOr<std::string> none = RenderProfileSvg(p, "", true, 1200, 0.1, nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("--flamechart"));

  // a, b, a in time: a flame chart shows a twice, a merged flame graph once.
  p.timeline = {{10, 0}, {20, 1}, {30, 0}};
  NP_ASSERT_OK_AND_ASSIGN(std::string chart, RenderProfileSvg(p, "", true, 1200, 0.1, nullptr));
  EXPECT_EQ(Count(chart, "<title>a (1 samples"), 2u);
  EXPECT_THAT(chart, HasSubstr(">Flame Chart</text>"));
  // The off-CPU and wall views' charts say which they are, as their graphs do.
  for (const auto& [event, title] : {std::pair{"off-cpu", ">Off-CPU Time Flame Chart</text>"},
                                     std::pair{"wall", ">Wall-Clock Time Flame Chart</text>"}}) {
    symbolize::Profile view = p;
    view.event = event;
    NP_ASSERT_OK_AND_ASSIGN(std::string titled,
                            RenderProfileSvg(view, "", true, 1200, 0.1, nullptr));
    EXPECT_THAT(titled, HasSubstr(title));
  }
  NP_ASSERT_OK_AND_ASSIGN(std::string graph, RenderProfileSvg(p, "", false, 1200, 0.1, nullptr));
  EXPECT_EQ(Count(graph, "<title>a (2 samples"), 1u);
  // In the chart the b frame lies between the two a frames.
  const size_t first_a = chart.find("<title>a (");
  const size_t b = chart.find("<title>b (");
  const size_t second_a = chart.find("<title>a (", first_a + 1);
  EXPECT_LT(first_a, b);
  EXPECT_LT(b, second_a);

  WriteOptions options;
  options.flamechart = true;
  Profile no_timeline = p;
  no_timeline.timeline.clear();
  EXPECT_EQ(WriteProfile(no_timeline, "/tmp/unused.svg", OutputFormat::kSvg, options).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SvgWriterTest, DeterministicBytes) {
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded("t;a;b 3\nt;c 2\nu;a 1\n"));
  NP_ASSERT_OK_AND_ASSIGN(std::string one, RenderProfileSvg(p, "", false, 1200, 0.1, nullptr));
  NP_ASSERT_OK_AND_ASSIGN(Profile q, ParseFolded("u;a 1\nt;c 2\nt;a;b 3\n"));
  NP_ASSERT_OK_AND_ASSIGN(std::string two, RenderProfileSvg(q, "", false, 1200, 0.1, nullptr));
  EXPECT_EQ(one, two);
}

TEST(FlameTreeTest, MergesByPathAndSortsChildrenByName) {
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded("t;z 1\nt;a;x 2\nt;a 3\n"));
  const FlameTree tree = BuildFlameGraphTree(p);
  ASSERT_EQ(tree.root().value[0], 6u);
  const std::vector<uint32_t> threads = tree.Children(0);
  ASSERT_EQ(threads.size(), 1u);
  const std::vector<uint32_t> kids = tree.Children(threads[0]);
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(tree.names()[tree.nodes()[kids[0]].name], "a");
  EXPECT_EQ(tree.nodes()[kids[0]].value[0], 5u);
  EXPECT_EQ(tree.nodes()[kids[0]].self[0], 3u);
  EXPECT_EQ(tree.names()[tree.nodes()[kids[1]].name], "z");
  EXPECT_EQ(tree.Children(kids[0]).size(), 1u);
}

}  // namespace
}  // namespace nativeprof::output

namespace nativeprof::output {
namespace {

// The size goal: 100,000 distinct stacks and 1,000,000 samples stay far under 20 MB.
TEST(SvgWriterTest, HundredThousandStacksStayUnderTwentyMegabytes) {
  Profile p;
  for (int i = 0; i < 5000; ++i) {
    p.frames.push_back(
        {absl::StrCat("namespace_", i % 13, "::Class", i % 101, "::method_", i, "(int, double)"),
         ProfileFrameKind::kUser, "", "", 0, "", 0});
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < 100000; ++i) {
    symbolize::ProfileStack s;
    s.thread_name = absl::StrCat("worker-", i % 4);
    uint32_t node = i % 4;
    for (int d = 0; d < 12 + static_cast<int>(i % 20); ++d) {
      node = (node * 31 + (d < 5 ? i % 3 : (i >> (d % 16)) % 40)) % 5000;
      s.frames.push_back(node);
    }
    s.frames.push_back(i % 5000);
    s.samples = i < 1000 ? 505 : 5;
    total += s.samples;
    p.stacks.push_back(std::move(s));
  }
  ASSERT_EQ(total, 1000000u);
  FlameSvgStats stats;
  NP_ASSERT_OK_AND_ASSIGN(std::string svg, RenderProfileSvg(p, "", false, 1200, 0.1, &stats));
  EXPECT_LT(svg.size(), 20u * 1000 * 1000);
  EXPECT_GT(stats.frames_pruned, 0u);
  EXPECT_GT(stats.frames_drawn, 1000u);
  EXPECT_THAT(svg, HasSubstr(absl::StrCat(" frames narrower than 0.1 px pruned")));
}

// An off-CPU graph says what it is, counts microseconds and is drawn in blues, never in the
// hot CPU palette.
TEST(SvgWriterTest, OffCpuGraphIsTitledCountedInMicrosecondsAndCool) {
  Profile p;
  p.event = "off-cpu";
  p.count_unit = "us";
  p.frames = {{"block_in_read", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"schedule", ProfileFrameKind::kKernel, "", "", 0, "", 0}};
  p.stacks.push_back({"app", 1, 1, {0, 1}, 1500, 1500000});
  p.stacks.back().off_cpu = true;
  NP_ASSERT_OK_AND_ASSIGN(std::string svg, RenderProfileSvg(p, "", false, 1200, 0.1, nullptr));
  EXPECT_THAT(svg, HasSubstr("Off-CPU Time Flame Graph"));
  EXPECT_THAT(svg, HasSubstr("1,500 us"));
  EXPECT_THAT(svg, HasSubstr("unit: \"us\""));
  const std::string hot = FlameColor("block_in_read", Palette::kUser);
  EXPECT_EQ(svg.find(hot), std::string::npos) << "user frames in the hot palette";
}

// A wall graph draws where threads ran in the warm palette and where they waited in the cool
// one; a frame above both halves takes the colour of the larger.
TEST(SvgWriterTest, WallGraphColoursOnAndOffCpuFramesApart) {
  Profile p;
  p.event = "wall";
  p.count_unit = "us";
  p.frames = {{"main", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"compute", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"read_input", ProfileFrameKind::kUser, "", "", 0, "", 0}};
  p.stacks.push_back({"app", 1, 1, {0, 1}, 300, 300000});      // on-CPU
  p.stacks.push_back({"app", 1, 1, {0, 2}, 1000, 1000000});    // blocked
  p.stacks.back().off_cpu = true;
  for (bool flamechart : {false, true}) {
    SCOPED_TRACE(flamechart);
    if (flamechart) p.timeline = {{1, 0, 0}, {2, 1, 0}};
    NP_ASSERT_OK_AND_ASSIGN(std::string svg,
                            RenderProfileSvg(p, "", flamechart, 1200, 0.1, nullptr));
    EXPECT_THAT(svg, HasSubstr(FlameColor("compute", Palette::kUser)));
    EXPECT_THAT(svg, Not(HasSubstr(FlameColor("read_input", Palette::kUser))));
    // main: 1,000 of its 1,300 us were off-CPU.
    EXPECT_THAT(svg, Not(HasSubstr(FlameColor("main", Palette::kUser))));
  }
}

}  // namespace
}  // namespace nativeprof::output
