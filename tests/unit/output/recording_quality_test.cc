#include "output/recording_quality.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "unwind/dwarf_stack_size.h"

namespace nativeprof::output {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;

QualityContext Dwarf() {
  QualityContext c;
  c.dwarf = true;
  c.dwarf_stack_bytes = 8192;
  c.depth_limit = "1024 frames";
  c.lost_line = "7 records lost because the ring buffer was full; try a larger -m or a lower -F";
  return c;
}

RecordingQuality Clean() {
  RecordingQuality q;
  q.samples = 1000;
  q.frames = 20000;
  q.ends[static_cast<size_t>(unwind::StackEnd::kComplete)] = 1000;
  return q;
}

// With frame-pointer chains, stacks that end in user code short of an entry point are chains the
// kernel could not follow: said once a percent of the samples has them, with the fix.
TEST(RecordingQualityTest, FramePointerChainsThatStopShortOfTheEntryAreNamed) {
  symbolize::Profile profile;
  for (const char* f : {"deep_rec", "main", "_start", "schedule", "start_thread"}) {
    symbolize::ProfileFrame frame;
    frame.function = f;
    if (std::string(f) == "schedule") frame.kind = symbolize::ProfileFrameKind::kKernel;
    profile.frames.push_back(frame);
  }
  auto stack = [&](std::vector<uint32_t> frames, uint64_t samples) {
    symbolize::ProfileStack s;
    s.frames = std::move(frames);
    s.samples = samples;
    profile.stacks.push_back(s);
  };
  stack({2, 1, 0}, 500);  // _start;main;deep_rec
  stack({4, 0}, 300);     // start_thread;deep_rec
  stack({3}, 50);         // kernel only
  stack({0}, 150);        // deep_rec: the chain broke
  EXPECT_EQ(RootlessSamples(profile), 150u);
  EXPECT_TRUE(OutermostFrameIsRoot("std::sys::unix::thread::Thread::new::thread_start"));
  EXPECT_FALSE(OutermostFrameIsRoot("[unknown]"));
  // Go names its assembly entry points with their ABI since 1.17 (a Go 1.19 program's every
  // frame-pointer stack was called rootless).
  EXPECT_TRUE(OutermostFrameIsRoot("runtime.goexit.abi0"));
  EXPECT_TRUE(OutermostFrameIsRoot("runtime.mstart.abi0"));
  EXPECT_TRUE(OutermostFrameIsRoot("runtime.rt0_go.abi0"));
  EXPECT_TRUE(OutermostFrameIsRoot("runtime.goexit"));
  // A stack on Go's scheduler stack starts where the goroutine switched to it.
  EXPECT_TRUE(OutermostFrameIsRoot("runtime.mcall"));
  EXPECT_TRUE(OutermostFrameIsRoot("runtime.morestack.abi0"));
  EXPECT_FALSE(OutermostFrameIsRoot("runtime.park_m"));
  EXPECT_FALSE(OutermostFrameIsRoot("main.main.abi0"));

  RecordingQuality q = Clean();
  q.rootless_samples = 150;
  QualityContext fp = Dwarf();
  fp.dwarf = false;
  EXPECT_THAT(RecordingQualityLines(q, fp),
              ElementsAre(HasSubstr("150 of 1000 samples (15.0%) have frame-pointer chains")));
  // DWARF stacks say why they ended themselves; under a percent is noise (a libc frame).
  EXPECT_THAT(RecordingQualityLines(q, Dwarf()), IsEmpty());
  q.rootless_samples = 9;
  EXPECT_THAT(RecordingQualityLines(q, fp), IsEmpty());
}

TEST(RecordingQualityTest, ACompleteProfileHasNothingToSay) {
  EXPECT_THAT(RecordingQualityLines(Clean(), Dwarf()), IsEmpty());
}

// The counts that never reached the summary before: each now has a line with what to do.
TEST(RecordingQualityTest, EveryProblemThatMattersGetsALineWithItsFix) {
  RecordingQuality q = Clean();
  q.lost_records = 7;
  q.corrupt_batches = 1;
  q.parse_errors = 2;
  q.throttled = 3;
  q.fp_fallback_frames = 400;  // 2 % of the frames
  q.ends[static_cast<size_t>(unwind::StackEnd::kTruncatedStack)] = 5;
  q.ends[static_cast<size_t>(unwind::StackEnd::kNoUnwindInfo)] = 4;
  const std::vector<std::string> lines = RecordingQualityLines(q, Dwarf());
  ASSERT_THAT(lines, SizeIs(7));
  EXPECT_EQ(lines[0], Dwarf().lost_line);
  EXPECT_THAT(lines[1], HasSubstr("1 ring batch skipped"));
  EXPECT_THAT(lines[2], HasSubstr("2 records shorter than their fields"));
  EXPECT_THAT(lines[3], HasSubstr("throttled sampling 3 times"));
  EXPECT_THAT(lines[3], HasSubstr("lower -F"));
  EXPECT_THAT(lines[4], HasSubstr("5 stacks truncated at 8192 bytes - try --call-graph dwarf,16384"));
  EXPECT_THAT(lines[5], HasSubstr("4 stacks ended early"));
  EXPECT_THAT(lines[6], HasSubstr("400 frames (2.0%) found with frame pointers"));
  EXPECT_THAT(lines[6], HasSubstr("-fasynchronous-unwind-tables"));
}

// At the largest copy the kernel makes, a larger one is not advice anyone can take.
TEST(RecordingQualityTest, StacksTruncatedAtTheLargestCopyAreNotToldToAskForIt) {
  RecordingQuality q = Clean();
  q.ends[static_cast<size_t>(unwind::StackEnd::kTruncatedStack)] = 5;
  QualityContext at_max = Dwarf();
  at_max.dwarf_stack_bytes = unwind::kMaxDwarfStackSize;
  const std::vector<std::string> lines = RecordingQualityLines(q, at_max);
  ASSERT_THAT(lines, SizeIs(1));
  EXPECT_THAT(lines[0], ::testing::Not(HasSubstr("try --call-graph dwarf")));
  EXPECT_THAT(lines[0], HasSubstr("--call-graph fp"));
}

// A truncated stack is told the fix for what cut it: the kernel's copy ending short of the size
// asked for (a larger size changes nothing), or the switch samples' own copy (--off-cpu-stack),
// which is not the --call-graph size.
TEST(RecordingQualityTest, TruncatedStacksAreToldWhatCutThem) {
  RecordingQuality q = Clean();
  q.ends[static_cast<size_t>(unwind::StackEnd::kTruncatedStack)] = 10 + 20 + 30 + 4;
  q.truncated_short_copy = 10;
  q.truncated_switch = 20;
  q.switch_spliced = 30;
  q.spliced = 30 + 1;
  QualityContext c = Dwarf();
  c.switch_stack_bytes = 256;
  std::vector<std::string> lines = RecordingQualityLines(q, c);
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[0], HasSubstr("10 stacks ended where the kernel's copy of the stack did"));
  EXPECT_THAT(lines[0], HasSubstr("--call-graph fp"));
  EXPECT_THAT(lines[1], HasSubstr("20 off-CPU stacks truncated at the switch samples' 256-byte "
                                  "copy - try --off-cpu-stack 512"));
  EXPECT_THAT(lines[2], HasSubstr("4 stacks truncated at 8192 bytes (1 completed by the kernel "
                                  "chain) - try --call-graph dwarf,16384"));
  // A tiny copy is not worth doubling: the advice is the default at least.
  c.dwarf_stack_bytes = 8;
  EXPECT_THAT(RecordingQualityLines(q, c)[2], HasSubstr("truncated at 8 bytes (1 completed by "
                                                         "the kernel chain) - try --call-graph "
                                                         "dwarf,8192"));
  c.dwarf_stack_bytes = 8192;
  c.switch_stack_bytes = 0;
  lines = RecordingQualityLines(q, c);
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[1], HasSubstr("20 off-CPU stacks taken without a stack copy"));
  EXPECT_THAT(lines[1], Not(HasSubstr("truncated at")));
}

TEST(RecordingQualityTest, FramePointerFallbackMattersOnlyInDwarfModeAndAboveOnePercent) {
  RecordingQuality q = Clean();
  q.fp_fallback_frames = 200;  // exactly 1 %: the odd hand-written entry stub
  EXPECT_THAT(RecordingQualityLines(q, Dwarf()), IsEmpty());
  q.fp_fallback_frames = 201;
  EXPECT_THAT(RecordingQualityLines(q, Dwarf()), SizeIs(1));
  QualityContext fp = Dwarf();
  fp.dwarf = false;
  q.ends[static_cast<size_t>(unwind::StackEnd::kNoUnwindInfo)] = 9;
  EXPECT_THAT(RecordingQualityLines(q, fp), IsEmpty()) << "fp stacks end where the kernel stopped";
}

TEST(RecordingQualityTest, UnnamedFramesNameTheWorstModules) {
  RecordingQuality q = Clean();
  q.symbols.addresses = 10;
  q.symbols.named = 6;
  q.named_frame_share = 0.75;
  q.symbols.worst_modules = {{"/usr/lib/libfoo.so", 4, "stripped, no debug file found",
                              "install libfoo-dbgsym"}};
  q.symbols.warnings = {"program built without optimization (-O0)"};
  EXPECT_THAT(RecordingQualityLines(q, Dwarf()),
              ElementsAre("75.0% of sampled frames named (6 of 10 distinct addresses)",
                          "  /usr/lib/libfoo.so: 4 unnamed (stripped, no debug file found); "
                          "install libfoo-dbgsym",
                          "program built without optimization (-O0)"));
}

// A sample taken inside execve has an [unknown] user frame with nothing behind it to name or to
// unwind: said once, as nothing to fix, and counted in neither the named share, the stacks that
// ended early, nor the frame-pointer chains that stop short.
TEST(RecordingQualityTest, SamplesTakenInsideExecveAreNotAProblem) {
  symbolize::Profile profile;
  using Kind = symbolize::ProfileFrameKind;
  for (const auto& [f, kind] : std::vector<std::pair<const char*, Kind>>{
           {"[unknown]", Kind::kUser}, {"__x64_sys_execve", Kind::kKernel},
           {"load_elf_binary", Kind::kKernel}, {"main", Kind::kUser}, {"_start", Kind::kUser}}) {
    symbolize::ProfileFrame frame;
    frame.function = f;
    frame.kind = kind;
    profile.frames.push_back(frame);
  }
  auto stack = [&](std::vector<uint32_t> frames, uint64_t samples) {
    symbolize::ProfileStack s;
    s.frames = std::move(frames);
    s.samples = samples;
    profile.stacks.push_back(s);
  };
  stack({0, 1, 2}, 10);  // [unknown];__x64_sys_execve_[k];load_elf_binary_[k]
  stack({4, 3}, 30);     // _start;main
  stack({0}, 5);         // [unknown] elsewhere: a miss, and a chain that stops short
  EXPECT_EQ(InsideExecveSamples(profile), 10u);
  EXPECT_EQ(RootlessSamples(profile), 5u);
  // Of 20 (exec, not the [unknown]) + 60 + 5 frame samples, 80 are named.
  EXPECT_DOUBLE_EQ(NamedFrameShare(profile), 80.0 / 85.0);

  RecordingQuality q = Clean();
  q.execve_samples = 10;
  q.ends[static_cast<size_t>(unwind::StackEnd::kNoModule)] = 10;
  q.symbols.addresses = 10;
  q.symbols.named = 10;
  const symbolize::SymbolizationStats::ModuleMiss execve{
      "[unknown]", 4, "sampled inside execve: the old image is gone, the new one not started",
      "nothing to fix", /*fixable=*/false};
  q.symbols.worst_modules = {execve};
  EXPECT_THAT(RecordingQualityLines(q, Dwarf()),
              ElementsAre("[unknown]: 4 unnamed (sampled inside execve: the old image is gone, "
                          "the new one not started); nothing to fix"));

  // Beside misses that can be fixed it comes after them, and takes none of their three places.
  q.ends[static_cast<size_t>(unwind::StackEnd::kNoModule)] = 12;
  q.symbols.addresses = 20;
  q.symbols.named = 14;
  q.named_frame_share = 0.9;
  q.symbols.worst_modules = {execve};
  for (const char* m : {"/a", "/b", "/c"}) {
    q.symbols.worst_modules.push_back({m, 2, "stripped, no debug file found", "install it"});
  }
  EXPECT_THAT(RecordingQualityLines(q, Dwarf()),
              ElementsAre("2 stacks ended early: no-module",
                          "90.0% of sampled frames named (14 of 20 distinct addresses)",
                          HasSubstr("/a: 2 unnamed"), HasSubstr("/b: 2 unnamed"),
                          HasSubstr("/c: 2 unnamed"), StartsWith("[unknown]: 4 unnamed")));
}

// Every count reaches the metadata, nonzero or not, in the sections older readers know.
TEST(RecordingQualityTest, TheJsonCarriesEveryCount) {
  RecordingQuality q = Clean();
  q.ring_records = 1;
  q.ring_bytes = 2;
  q.corrupt_batches = 3;
  q.parse_errors = 4;
  q.peak_held_bytes = 5;
  q.lost_records = 6;
  q.lost_samples = 7;
  q.throttled = 8;
  q.kernel_frames = 9;
  q.unmapped_frames = 10;
  q.spliced = 11;
  q.fp_fallback_frames = 12;
  q.expr_frames = 13;
  q.execve_samples = 15;
  q.symbols.addresses = 14;
  q.symbols.named = 14;
  nlohmann::json j = {{"ring", {{"cpus", 2}}}};
  AddRecordingQualityJson(q, &j);
  EXPECT_EQ(j["ring"]["cpus"], 2) << "the ring's layout stays beside its counts";
  EXPECT_EQ(j["ring"]["records"], 1);
  EXPECT_EQ(j["ring"]["bytes"], 2);
  EXPECT_EQ(j["ring"]["corrupt_batches"], 3);
  EXPECT_EQ(j["ring"]["parse_errors"], 4);
  EXPECT_EQ(j["ring"]["peak_held_bytes"], 5);
  EXPECT_EQ(j["lost"]["records"], 6);
  EXPECT_EQ(j["lost"]["samples"], 7);
  EXPECT_EQ(j["throttled"], 8);
  EXPECT_EQ(j["unwind"]["frames"], 20000);
  EXPECT_EQ(j["unwind"]["kernel_frames"], 9);
  EXPECT_EQ(j["unwind"]["unmapped_frames"], 10);
  EXPECT_EQ(j["unwind"]["spliced"], 11);
  EXPECT_EQ(j["unwind"]["fp_fallback_frames"], 12);
  EXPECT_EQ(j["unwind"]["expr_frames"], 13);
  EXPECT_EQ(j["unwind"]["execve_samples"], 15);
  EXPECT_EQ(j["unwind"]["ends"]["complete"], 1000);
  EXPECT_EQ(j["symbolization"]["addresses"], 14);
  EXPECT_EQ(j["symbolization"]["named_frame_share"], 1.0);
}

}  // namespace
}  // namespace nativeprof::output
