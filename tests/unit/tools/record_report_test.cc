#include "tools/record_report.h"

#include "absl/strings/str_cat.h"
#include "nativeprof/nativeprof.h"
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::tools {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

RunState Waited(double wait_seconds, double duration_seconds) {
  RunState state;
  state.duration_seconds = duration_seconds;
  state.scheduling.wait_seconds = wait_seconds;
  return state;
}

TEST(LostRecordsLineTest, BlamesTheRingWhenTheDrainThreadGotACpu) {
  EXPECT_EQ(LostRecordsLine(12, Waited(0.01, 2.0)),
            "12 records lost because the ring buffer was full; try a larger -m or a lower -F");
  // A kernel without schedstat: nothing to blame the CPU with.
  RunState unknown;
  unknown.duration_seconds = 2.0;
  EXPECT_THAT(LostRecordsLine(3, unknown), HasSubstr("try a larger -m"));
  // With --off-cpu, the stack copied at every switch is the lever.
  EXPECT_EQ(LostRecordsLine(12, Waited(0.01, 2.0), /*off_cpu=*/true),
            "12 records lost because the ring buffer was full; try a larger -m, a lower -F, or "
            "less stack per switch (--off-cpu-stack 0 keeps only the kernel's frame-pointer "
            "chain)");
}

TEST(LostRecordsLineTest, BlamesTheCpuWhenTheDrainThreadWaitedForOne) {
  const std::string line = LostRecordsLine(3503, Waited(1.5, 2.0));
  EXPECT_EQ(line,
            "3503 records lost while nativeprof waited 1500 ms for a CPU (machine saturated): run "
            "as root / with CAP_SYS_NICE so it can raise its priority, or lower -F");
  EXPECT_THAT(line, Not(HasSubstr("-m")));
  // With --off-cpu each switch copies a stack: copying less is a lever an unprivileged user has.
  EXPECT_THAT(LostRecordsLine(3503, Waited(1.5, 2.0), /*off_cpu=*/true),
              HasSubstr("or lower -F, or copy less stack per switch with --off-cpu-stack"));
  // The threshold is a share of the sampling time.
  EXPECT_THAT(LostRecordsLine(1, Waited(kStarvedWaitShare * 2.0, 2.0)), HasSubstr("waited"));
}

TEST(LostRecordsLineTest, AdviceFollowsWhatThePriorityWas) {
  RunState no_boost = Waited(1.0, 2.0);
  no_boost.scheduling.boost_disabled = true;
  EXPECT_THAT(LostRecordsLine(5, no_boost), HasSubstr("drop --no-boost"));

  RunState niced = Waited(1.0, 2.0);
  niced.scheduling.boost.kind = PriorityKind::kNice;
  niced.scheduling.boost.value = -5;
  EXPECT_THAT(LostRecordsLine(5, niced), HasSubstr("it ran at nice -5; run as root"));

  // --off-cpu never asks for SCHED_FIFO: "run as root" would not help.
  RunState off_cpu = niced;
  off_cpu.scheduling.realtime_skipped = true;
  EXPECT_THAT(LostRecordsLine(5, off_cpu),
              AllOf(HasSubstr("it ran at nice -5 (with --off-cpu not SCHED_FIFO"),
                    HasSubstr("--off-cpu-stack"), Not(HasSubstr("root"))));

  RunState fifo = Waited(1.0, 2.0);
  fifo.scheduling.boost.kind = PriorityKind::kRealtime;
  fifo.scheduling.boost.value = 1;
  EXPECT_THAT(LostRecordsLine(5, fifo),
              AllOf(StartsWith("5 records lost while nativeprof waited 1000 ms"),
                    HasSubstr("it ran at SCHED_FIFO 1 and still waited"), Not(HasSubstr("root"))));
}

}  // namespace
}  // namespace nativeprof::tools

namespace nativeprof::tools {
namespace {

// The C header's version macros are written by hand; they must say what CMake's project() says.
TEST(VersionTest, HeaderMacrosMatchTheProjectVersion) {
  EXPECT_EQ(absl::StrCat(NATIVEPROF_VERSION_MAJOR, ".", NATIVEPROF_VERSION_MINOR, ".",
                         NATIVEPROF_VERSION_PATCH),
            NATIVEPROF_VERSION_STRING);
}

// --alloc=1: an allocation counted but never written (in flight when its process ended, as with
// exit() from another thread) is said, not hidden behind "every allocation sampled".
TEST(AllocSummaryLinesTest, EverySampledSaysWhatWasInFlight) {
  AllocRun run;
  run.rate_bytes = 1;
  run.duration_seconds = 1;
  run.totals.processes = 1;
  run.totals.alloc_calls = 251'996;
  run.totals.free_calls = 251'996;
  run.totals.sampled = 251'996;
  auto summary = [&run] {
    std::string all;
    for (const std::string& line : AllocSummaryLines(run)) absl::StrAppend(&all, line, "\n");
    return all;
  };
  EXPECT_THAT(summary(), AllOf(HasSubstr("every allocation sampled (251,996)"),
                               Not(HasSubstr("in flight"))));
  run.totals.sampled = 251'995;
  EXPECT_THAT(summary(),
              HasSubstr("every allocation sampled (251,995; 1 in flight when its process ended)"));
  // Dropped for want of room: counted as lost, not in flight.
  run.totals.lost_samples = 1;
  EXPECT_THAT(summary(), AllOf(HasSubstr("every allocation sampled (251,995), 1 lost"),
                               Not(HasSubstr("in flight"))));
}

// RSS far above what malloc had live: the line names the ways memory comes without malloc, and
// for CPython the switch that routes its objects through malloc.
TEST(AllocSummaryLinesTest, RssWithoutMallocNamesTheOtherWays) {
  AllocRun run;
  run.rate_bytes = 512 * 1024;
  run.duration_seconds = 1;
  run.totals.processes = 1;
  run.totals.alloc_calls = 146;
  run.totals.alloc_bytes = 51'000;
  run.totals.peak_bytes = 20'000;
  run.peak_rss_bytes = 125'000'000;
  run.process_heaps.push_back({.command = "git"});
  auto summary = [&run] {
    std::string all;
    for (const std::string& line : AllocSummaryLines(run)) absl::StrAppend(&all, line, "\n");
    return all;
  };
  EXPECT_THAT(summary(), HasSubstr("none was sampled (51.0 kB allocated in all"));
  EXPECT_THAT(summary(), HasSubstr("leaked 51.0 kB in 146 blocks"));
  // Forked children freed their copies of their parents' blocks: more freed than allocated.
  run.totals.free_calls = 150;
  EXPECT_THAT(summary(), AllOf(HasSubstr("leaked unknown (forked processes freed more"),
                               Not(HasSubstr("in 0 blocks"))));
  run.totals.free_calls = 0;
  EXPECT_THAT(summary(), AllOf(HasSubstr("from mapped files or mmap"),
                               HasSubstr("build it without that allocator"),
                               Not(HasSubstr("PYTHONMALLOC"))));
  run.process_heaps[0].command = "python3";
  EXPECT_THAT(summary(), AllOf(HasSubstr("PYTHONMALLOC=malloc"),
                               Not(HasSubstr("build it without that allocator"))));
  run.peak_rss_bytes = 100'000;  // explained by the heap
  EXPECT_THAT(summary(), Not(HasSubstr("came another way")));
}

// A shell loop of short commands: each new process starts its sampling timer afresh, so most of
// its CPU time is never sampled. The line says how much the samples cover, and only then.
TEST(SampleCoverageLineTest, SaysWhenSamplesMissMostOfTheCpuTime) {
  sampler::CounterValue task_clock =
      sampler::MakeCounterValue(*sampler::ParseEventSpec("task-clock"), 170'400'000, 1, 1);
  EXPECT_EQ(SampleCoverageLine(18'000'000, {task_clock}, 999),
            "the samples cover 11% of the command's CPU time (18 of 170 ms task-clock): processes "
            "or threads that each run less than a sampling period (1.0 ms at -F 999) are mostly "
            "missed; raise -F");
  EXPECT_EQ(SampleCoverageLine(160'000'000, {task_clock}, 999), std::nullopt);
  // Too short to tell, or no task-clock to compare with.
  sampler::CounterValue short_run =
      sampler::MakeCounterValue(*sampler::ParseEventSpec("task-clock"), 50'000'000, 1, 1);
  EXPECT_EQ(SampleCoverageLine(1'000'000, {short_run}, 999), std::nullopt);
  EXPECT_EQ(SampleCoverageLine(1'000'000, {}, 999), std::nullopt);
}

}  // namespace
}  // namespace nativeprof::tools
