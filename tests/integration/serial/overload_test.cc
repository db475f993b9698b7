// End-to-end tests of `nativeprof record -p` on a saturated machine (issue 15): the target has far
// more always-runnable threads than there are CPUs, so a profiler at normal priority waits behind
// all of them for a CPU while its rings fill. These tests load every CPU on purpose, so they are
// a binary of their own that ctest runs alone (RUN_SERIAL): beside other tests they would slow
// those down, and those would add their own load to the timing asserted here.
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Runs the calling thread at SCHED_FIFO 2 while in scope (above nativeprof's own boost at 1), so
// the test's clock readings and waits are not delayed by the load it creates. SCHED_RESET_ON_FORK
// starts every process the test spawns at SCHED_OTHER, nice 0, as from a shell. ok() is false
// where real-time scheduling is not permitted (not root, no CAP_SYS_NICE or RLIMIT_RTPRIO).
class ScopedRealtime {
 public:
  ScopedRealtime() {
    sched_param param{};
    param.sched_priority = 2;
    ok_ = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0;
  }
  ~ScopedRealtime() {
    if (!ok_) return;
    sched_param param{};
    sched_setscheduler(0, SCHED_OTHER, &param);
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

// At least 4 runnable threads per CPU, as the issue asks, and at least 256 in all: the issue's
// process had 500, and with fewer than ~100 per CPU a starved profiler still keeps up often
// enough that the test could pass without the fix.
int OverloadThreads() {
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  return static_cast<int>(std::max(256L, 4 * cpus));
}

struct AttachRun {
  double wall_seconds = 0;  // from spawning nativeprof to its exit
  double written_seconds = -1;  // from spawning nativeprof to its last output's mtime
  CommandResult result;
  nlohmann::json meta;
  FoldedProfile profile;
  uint64_t samples = 0;
  uint64_t lost = 0;
  double LostShare() const {
    return samples + lost == 0 ? 0.0 : static_cast<double>(lost) / (samples + lost);
  }
  double Ms(const char* field) const {
    const nlohmann::json& s = meta["scheduling"];
    return s.contains(field) ? s[field].get<double>() : -1.0;
  }
};

AttachRun AttachWithDuration(pid_t pid, const std::string& seconds,
                             const std::vector<std::string>& extra) {
  // Outputs and nativeprof's cache in memory: on a disk, writing them can wait for the file
  // system's journal thread, which runs at normal priority behind every spinner (a CI run took
  // 0.8 s longer than the bound below, all of it after sampling had stopped on time).
  const std::string dir = MakeMemoryTempDir();
  std::string folded = dir + "/overload.folded";
  std::vector<std::string> argv = {"env", "NATIVEPROF_CACHE_DIR=" + dir + "/cache",
                                   NativeprofBinary(), "record", "-p", std::to_string(pid),
                                   "--duration", seconds, "-o", folded};
  argv.insert(argv.end(), extra.begin(), extra.end());
  AttachRun run;
  const auto start = std::chrono::steady_clock::now();
  timespec start_realtime{};  // the clock file times are in
  ::clock_gettime(CLOCK_REALTIME, &start_realtime);
  run.result = RunCommand(argv);
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  struct stat meta_stat;
  if (::stat((folded + ".json").c_str(), &meta_stat) == 0) {
    run.written_seconds =
        static_cast<double>(meta_stat.st_mtim.tv_sec - start_realtime.tv_sec) +
        static_cast<double>(meta_stat.st_mtim.tv_nsec - start_realtime.tv_nsec) * 1e-9;
  }
  run.meta = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  run.profile = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  if (run.meta.is_object()) {
    run.samples = run.meta["samples"].get<uint64_t>();
    run.lost = run.meta["lost"]["records"].get<uint64_t>() +
               run.meta["lost"]["samples"].get<uint64_t>();
  }
  return run;
}

size_t SampledThreads(const FoldedProfile& p) {
  std::set<std::string> comms;
  for (const FoldedLine& line : p.lines()) {
    if (!line.frames.empty() && line.frames[0].rfind("spin-", 0) == 0) comms.insert(line.frames[0]);
  }
  return comms.size();
}

TEST(OverloadTest, KeepsUpWhenRunnableThreadsOutnumberTheCpus) {
  NP_SKIP_IF_NO_PERF();
  ScopedRealtime realtime;
  const int threads = OverloadThreads();
  BackgroundProcess target({TargetPath("overload_spinners"), std::to_string(threads)},
                           /*capture_stdout=*/true);
  ASSERT_EQ(target.ReadLine(), "ready " + std::to_string(threads));
  usleep(300 * 1000);  // every spinner has used up its first slice: the run queues are full

  AttachRun run = AttachWithDuration(target.pid(), "2", {});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_TRUE(run.meta.is_object()) << run.result.err;
  const std::string priority = run.meta["scheduling"]["priority"].get<std::string>();
  const double startup = run.Ms("startup_ms") / 1e3;
  const double sampled = run.meta["duration_seconds"].get<double>();
  RecordProperty("wall_ms", static_cast<int>(run.wall_seconds * 1e3));
  RecordProperty("startup_ms", static_cast<int>(startup * 1e3));
  RecordProperty("written_ms", static_cast<int>(run.written_seconds * 1e3));
  RecordProperty("lost_per_mille", static_cast<int>(run.LostShare() * 1e3));
  SCOPED_TRACE(absl::StrFormat("%d threads; wall %.2f s, of it %.2f s before main could raise "
                               "the priority; sampled %.2f s; outputs written at %.2f s; %d "
                               "samples, %d lost; %s\n%s",
                               threads, run.wall_seconds, startup, sampled, run.written_seconds,
                               run.samples, run.lost, priority, run.result.err));
  if (!realtime.ok()) {
    // nativeprof cannot raise its priority either, so it is starved: all that can be asserted is
    // that it says so rather than blaming the ring size.
    EXPECT_NE(priority, "SCHED_FIFO 1");
    EXPECT_GT(run.Ms("run_queue_wait_ms"), 0.05 * sampled * 1e3);
    if (run.lost > 0) EXPECT_THAT(run.result.err, HasSubstr("waited"));
    return;
  }
  EXPECT_EQ(priority, "SCHED_FIFO 1");
  EXPECT_LE(run.LostShare(), 0.01);
  // From the boost on, nativeprof gets a CPU when it wants one: while opening the events...
  EXPECT_LT(run.Ms("setup_run_queue_wait_ms"), 50);
  // ... and while sampling (the share from which losses are blamed on waiting for a CPU).
  EXPECT_LT(run.Ms("run_queue_wait_ms"), 0.05 * sampled * 1e3);
  // Sampling stops on time: --duration counts from enabling the events, and the last drain is
  // short. (Without the boost this was 2.1 to 4.8 s here, 13.7 s with 500 threads.)
  EXPECT_GE(sampled, 1.95);
  EXPECT_LE(sampled, 2.1);
  // Done within 3 s of starting. What happens before main() - exec and loading 40-odd shared
  // libraries, ~5 ms of CPU on an idle machine and twice that among the spinners - runs at the
  // priority the shell gave. Here that costs 0.8 to 5 s of waiting behind the spinners
  // (/bin/true alone takes 0.3 to 0.9 s), depending on what else runs; nativeprof cannot shorten
  // it, so it is taken out: startup_ms is the process's age when the boost took effect.
  // From there on this took 2.03 to 2.09 s in 40 runs (half of them beside 4 busy loops), later
  // 2.21 to 2.23 s on a VM whose empty cache makes the run read /proc/kallsyms after sampling,
  // and 2.51 s once on a CI machine; without the boost (--no-boost) 22 s. The bound sits between.
  EXPECT_LE(run.wall_seconds - startup, 3.0);
  // Each spinner gets ~2 CPUs x 2 s / threads of CPU time (over 10 samples): nearly all show up.
  EXPECT_GE(SampledThreads(run.profile), static_cast<size_t>(threads) * 3 / 4);
  EXPECT_GT(run.profile.WithSequence({"overload_spin_outer", "overload_spin_leaf"}),
            run.profile.total() / 2);
}

TEST(OverloadTest, LossesWhileWaitingForACpuAreBlamedOnTheCpu) {
  NP_SKIP_IF_NO_PERF();
  ScopedRealtime realtime;
  // Fewer threads (the unboosted setup is slow) but a tiny ring: four 8 KiB DWARF samples fill
  // it, far less than one wait of a starved drain thread.
  const int threads = 64;
  BackgroundProcess target({TargetPath("overload_spinners"), std::to_string(threads)},
                           /*capture_stdout=*/true);
  ASSERT_EQ(target.ReadLine(), "ready " + std::to_string(threads));
  usleep(300 * 1000);

  AttachRun run = AttachWithDuration(target.pid(), "1",
                                     {"--no-boost", "--no-counters", "-m", "8"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_TRUE(run.meta.is_object()) << run.result.err;
  SCOPED_TRACE(run.result.err);
  EXPECT_EQ(run.meta["scheduling"]["priority"], "normal");
  EXPECT_EQ(run.meta["scheduling"]["priority_note"], "--no-boost");
  const double sampled_ms = run.meta["duration_seconds"].get<double>() * 1e3;
  EXPECT_GT(run.Ms("run_queue_wait_ms"), 0.05 * sampled_ms);
  ASSERT_GT(run.lost, 0u) << "a starved drain thread with a 32 KiB ring must lose records";
  EXPECT_THAT(run.result.err, HasSubstr("records lost while nativeprof waited"));
  EXPECT_THAT(run.result.err, HasSubstr("for a CPU (machine saturated): drop --no-boost"));
  EXPECT_THAT(run.result.err, Not(HasSubstr("try a larger -m")));
}

}  // namespace
}  // namespace nativeprof::testing
