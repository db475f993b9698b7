#include "output/speedscope_writer.h"

#include <string>

#include "nlohmann/json.hpp"
#include "output/folded_reader.h"
#include "tests/testing/test_support.h"

namespace nativeprof::output {
namespace {

using symbolize::Profile;
using symbolize::ProfileFrameKind;

Profile ThreadedProfile() {
  Profile p;
  p.weight_unit = "nanoseconds";
  p.frames = {{"main", ProfileFrameKind::kUser, "", "", 0, "app.cc", 3},
              {"work", ProfileFrameKind::kUser, "", "", 0, "", 0},
              {"sys_write", ProfileFrameKind::kKernel, "", "", 0, "", 0},
              {"work", ProfileFrameKind::kUser, "", "", 0x40, "", 0}};  // same name, other offset
  p.stacks.push_back({"app", 1, 1, {0, 1}, 2, 2000});
  p.stacks.push_back({"app", 1, 1, {0, 2}, 1, 1000});
  p.stacks.push_back({"worker \"w\"", 1, 2, {3}, 5, 5000});
  return p;
}

TEST(SpeedscopeWriterTest, OneSampledProfilePerThreadHeaviestFirst) {
  const nlohmann::json j = nlohmann::json::parse(RenderSpeedscope(ThreadedProfile(), "t"));
  EXPECT_EQ(j["$schema"], "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(j["name"], "t");
  const auto& frames = j["shared"]["frames"];
  ASSERT_EQ(frames.size(), 3u);  // the two "work" frames are one
  EXPECT_EQ(frames[0]["name"], "main");
  EXPECT_EQ(frames[0]["file"], "app.cc");
  EXPECT_EQ(frames[0]["line"], 3);
  EXPECT_EQ(frames[2]["name"], "sys_write_[k]");
  const auto& profiles = j["profiles"];
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(profiles[0]["type"], "sampled");
  EXPECT_EQ(profiles[0]["name"], "worker \"w\" (1/2)");
  EXPECT_EQ(profiles[0]["unit"], "nanoseconds");
  EXPECT_EQ(profiles[0]["endValue"], 5000);
  EXPECT_EQ(profiles[0]["samples"], nlohmann::json::parse("[[1]]"));
  EXPECT_EQ(profiles[1]["name"], "app (1/1)");
  EXPECT_EQ(profiles[1]["samples"], nlohmann::json::parse("[[0,1],[0,2]]"));
  EXPECT_EQ(profiles[1]["weights"], nlohmann::json::parse("[2000,1000]"));
  EXPECT_EQ(j["activeProfileIndex"], 0);
  // No samples: no profile for an index to name.
  const nlohmann::json empty = nlohmann::json::parse(RenderSpeedscope(Profile(), "e"));
  EXPECT_TRUE(empty["profiles"].empty());
  EXPECT_FALSE(empty.contains("activeProfileIndex"));
}

// A new thread runs under its creator's name until it names itself: still one profile, named
// as most of its time is.
TEST(SpeedscopeWriterTest, ARenamedThreadIsOneProfileUnderItsMainName) {
  Profile p = ThreadedProfile();
  p.stacks.push_back({"app", 1, 2, {0}, 1, 100});  // tid 2 before it became "worker"
  const nlohmann::json j = nlohmann::json::parse(RenderSpeedscope(p, "t"));
  const auto& profiles = j["profiles"];
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(profiles[0]["name"], "worker \"w\" (1/2)");
  EXPECT_EQ(profiles[0]["endValue"], 5100);
  EXPECT_EQ(profiles[0]["weights"], nlohmann::json::parse("[5000,100]"));
  // Without ids (a profile read from a folded file), names alone tell threads apart.
  Profile folded = ThreadedProfile();
  for (symbolize::ProfileStack& s : folded.stacks) s.pid = s.tid = 0;
  EXPECT_EQ(nlohmann::json::parse(RenderSpeedscope(folded, "t"))["profiles"].size(), 2u);
}

TEST(SpeedscopeWriterTest, TimelineKeepsTimeOrderWithMeanPeriods) {
  Profile p = ThreadedProfile();
  p.timeline = {{100, 1}, {200, 0}, {300, 0}, {400, 2}};
  const nlohmann::json j = nlohmann::json::parse(RenderSpeedscope(p, "t"));
  // Now app carries 3 x 1000 ns and the worker's single sample 1000 ns: app comes first.
  const auto& app = j["profiles"][0];
  ASSERT_EQ(app["name"], "app (1/1)");
  EXPECT_EQ(j["profiles"][1]["weights"], nlohmann::json::parse("[1000]"));
  EXPECT_EQ(app["samples"], nlohmann::json::parse("[[0,2],[0,1],[0,1]]"));
  EXPECT_EQ(app["weights"], nlohmann::json::parse("[1000,1000,1000]"));
}

TEST(SpeedscopeWriterTest, FoldedInputUsesSampleCounts) {
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded("t;a;b 5\nt;a 2\n"));
  const nlohmann::json j = nlohmann::json::parse(RenderSpeedscope(p, "x"));
  ASSERT_EQ(j["profiles"].size(), 1u);
  EXPECT_EQ(j["profiles"][0]["unit"], "none");
  EXPECT_EQ(j["profiles"][0]["name"], "t");
  EXPECT_EQ(j["profiles"][0]["endValue"], 7);
}

// Off-CPU intervals in a time-ordered profile are as wide as they lasted, not the stack's mean.
TEST(SpeedscopeWriterTest, TimedSamplesKeepTheirOwnWeight) {
  Profile p;
  p.weight_unit = "nanoseconds";
  p.count_unit = "us";
  p.frames = {{"main", ProfileFrameKind::kUser, "", "", 0, "", 0}};
  p.stacks.push_back({"app", 1, 1, {0}, 5, 5000});
  p.timeline = {{10, 0, 1000}, {20, 0, 4000}};
  const nlohmann::json j = nlohmann::json::parse(RenderSpeedscope(p, "t"));
  ASSERT_EQ(j["profiles"].size(), 1u);
  EXPECT_EQ(j["profiles"][0]["weights"], nlohmann::json::parse("[1000, 4000]"));
  EXPECT_EQ(j["profiles"][0]["endValue"], 5000);
}

}  // namespace
}  // namespace nativeprof::output
