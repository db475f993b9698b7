#include "output/frame_modules.h"

#include <string>

#include "gtest/gtest.h"
#include "output/function_stats.h"
#include "output/report_markdown.h"
#include "output/report_model.h"

namespace nativeprof::output {
namespace {

using symbolize::ProfileFrame;
using symbolize::ProfileFrameKind;

ProfileFrame Frame(const char* function, const char* module,
                   ProfileFrameKind kind = ProfileFrameKind::kUser) {
  ProfileFrame f;
  f.function = function;
  f.module = module;
  f.kind = kind;
  return f;
}

symbolize::ProfileStack Stack(std::vector<uint32_t> frames, uint64_t samples) {
  symbolize::ProfileStack s;
  s.thread_name = "hotbin";
  s.frames = std::move(frames);
  s.samples = samples;
  return s;
}

symbolize::Profile Recorded() {
  symbolize::Profile p;
  p.frames = {
      Frame("main", "/usr/bin/hotbin"),
      Frame("malloc", "/lib/x86_64-linux-gnu/libc.so.6"),
      Frame("hotlib::hash", "/usr/bin/hotbin", ProfileFrameKind::kInlined),
      Frame("ksys_write", "[kernel.kallsyms]", ProfileFrameKind::kKernel),
      Frame("[unknown]", ""),
      Frame("dup", "/a/liba.so"),
      Frame("dup", "/b/libb.so"),
  };
  p.stacks = {Stack({0, 2, 1}, 3), Stack({0, 3, 4}, 2), Stack({0, 5}, 1), Stack({0, 6}, 4)};
  return p;
}

TEST(FrameModulesTest, MapsFoldedNamesToBasenames) {
  const nlohmann::json j = FrameModulesJson(Recorded());
  EXPECT_EQ(j["modules"], nlohmann::json::parse(R"(["hotbin","libb.so","libc.so.6"])"));
  EXPECT_EQ(j["frames"],
            nlohmann::json::parse(R"({"dup":1,"hotlib::hash_[i]":0,"main":0,"malloc":2})"));
  EXPECT_EQ(j["omitted"], 0);
  // Parsing gives the names back; a second dump is byte-identical.
  const FrameModuleMap map = ParseFrameModules({{"frame_modules", j}});
  EXPECT_EQ(map.size(), 4u);
  EXPECT_EQ(map.at("malloc"), "libc.so.6");
  EXPECT_EQ(map.at("dup"), "libb.so");  // 4 samples there against 1 in liba.so
  EXPECT_EQ(FrameModulesJson(Recorded()).dump(), j.dump());
}

// The CPU view and the allocation view name different frames: the table covers both.
TEST(FrameModulesTest, SeveralProfilesAreMerged) {
  const symbolize::Profile cpu = Recorded();
  symbolize::Profile alloc;
  alloc.frames = {Frame("main", "/bin/hotbin"), Frame("_IO_file_doallocate", "/lib/libc.so.6"),
                  Frame("malloc", "/lib/libnativeprof_alloc.so")};
  alloc.stacks = {Stack({0, 1}, 4096), Stack({0, 2}, 1 << 20)};
  const symbolize::Profile* both[] = {&cpu, &alloc};
  const FrameModuleMap map = ParseFrameModules({{"frame_modules", FrameModulesJson(both)}});
  EXPECT_EQ(map.size(), 5u);
  EXPECT_EQ(map.at("_IO_file_doallocate"), "libc.so.6");
  // The CPU view's module, however many bytes the allocation view counts for the name.
  EXPECT_EQ(map.at("malloc"), "libc.so.6");
}

TEST(FrameModulesTest, LongNamesAreLeftOutAndCounted) {
  symbolize::Profile p = Recorded();
  p.frames[0].function = std::string(kMaxFrameModuleNameBytes + 1, 'x');
  const nlohmann::json j = FrameModulesJson(p);
  EXPECT_EQ(j["omitted"], 1);
  EXPECT_FALSE(j["frames"].contains(p.frames[0].function));
}

TEST(FrameModulesTest, ParseSkipsMalformedEntries) {
  EXPECT_TRUE(ParseFrameModules(nullptr).empty());
  EXPECT_TRUE(ParseFrameModules({{"frame_modules", 3}}).empty());
  const FrameModuleMap map = ParseFrameModules(nlohmann::json::parse(
      R"({"frame_modules": {"modules": ["a.so", 7], "frames": {"x": 0, "y": 1, "z": 9, "w": "a"}}})"));
  ASSERT_EQ(map.size(), 1u);
  EXPECT_EQ(map.at("x"), "a.so");
}

TEST(ModuleTableTest, TotalCountsEachSampleOncePerModule) {
  const symbolize::Profile p = Recorded();
  const nlohmann::json j = FrameModulesJson(p);
  const FrameModuleMap map = ParseFrameModules({{"frame_modules", j}});
  const FunctionTable t = CountGroups(p, FrameModuleKeys(p, &map));
  EXPECT_EQ(t.samples, 10u);
  auto find = [&](const std::string& name) {
    for (const FunctionCounts& f : t.functions) {
      if (f.name == name) return f;
    }
    return FunctionCounts{};
  };
  // main and the inlined hotlib::hash are both in hotbin, but the crate rule sends hotlib::hash
  // to "hotlib"; hotbin is on every stack exactly once.
  EXPECT_EQ(find("hotbin").total, 10u);
  EXPECT_EQ(find("hotbin").self, 0u);
  EXPECT_EQ(find("hotlib").total, 3u);
  EXPECT_EQ(find("libc.so.6").self, 3u);
  EXPECT_EQ(find("[kernel]").total, 2u);
  EXPECT_EQ(find("[unknown]").self, 2u);
  EXPECT_EQ(find("libb.so").self, 5u);  // both "dup" frames: the name maps to one module
}

TEST(MarkdownCodeTest, EscapesPipesAndFencesBackticks) {
  EXPECT_EQ(MarkdownCode("hotlib::run"), "`hotlib::run`");
  EXPECT_EQ(MarkdownCode("a|b"), "`a\\|b`");
  EXPECT_EQ(MarkdownCode("a|b", /*in_table=*/false), "`a|b`");
  EXPECT_EQ(MarkdownCode("x`y"), "``x`y``");
  EXPECT_EQ(MarkdownCode("`a``"), "``` `a`` ```");
  EXPECT_EQ(MarkdownCode("<T as core::fmt::Debug>::fmt"), "`<T as core::fmt::Debug>::fmt`");
}

}  // namespace
}  // namespace nativeprof::output
