// `record --off-cpu -p` on a process that switches ~15,000 times a second, beside one blocked for
// the whole recording. Serial: the loss it bounds is the drain thread's, which runs at nice -20
// (not SCHED_FIFO with --off-cpu) and lost 400-3,400 records when the recordings of tests beside
// it, whose drain threads are real-time, took both CPUs for 55-83 ms.
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/off_cpu_targets.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

// Attaching to a process that switches ~15,000 times a second, beside one blocked for the whole
// recording: the blocked thread's stack and /proc/kallsyms for its kernel frames were read after
// the events were enabled and before the first drain (70 ms), and the rings overflowed meanwhile
// (2,045 of ~15,000 switch records lost here). They are read before enabling now.
TEST(OffCpuTest, AttachingToABusyProcessLosesNoRecordsAtTheStart) {
  NP_SKIP_IF_NO_PERF();
  std::unique_ptr<BackgroundProcess> sleeper = StartSleepingTarget(/*in_main=*/false);
  const std::string sleeper_pid = std::to_string(sleeper->pid());
  if (!CanReadBlockedStacks(sleeper_pid)) GTEST_SKIP() << kNoPtraceRights;
  BackgroundProcess busy({TargetPath("offcpu_workload"), "pingpong", "3", "20"},
                         /*capture_stdout=*/true);
  ::usleep(300'000);  // both threads handing the byte back and forth
  const std::string folded = MakeTempDir() + "/busy.folded";
  CommandResult r = RunCommand({NativeprofBinary(), "record", "--off-cpu", "--no-counters",
                                "--duration", "1", "-p",
                                absl::StrCat(busy.pid(), ",", sleeper_pid), "-o", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json meta =
      nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  ASSERT_TRUE(meta.is_object() && meta.contains("off_cpu")) << r.err;
  const double switches = meta["off_cpu"]["switch_samples"].get<double>();
  ASSERT_GT(switches, 3000) << r.err;
  // A margin for a drain that a loaded machine delays; the start alone lost 13 %.
  EXPECT_LE(meta["lost"]["records"].get<double>(), 0.02 * switches) << r.err;
}

}  // namespace
}  // namespace nativeprof::testing
