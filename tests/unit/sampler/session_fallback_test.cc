// Session's fallback ladder (hardware -> cpu-clock, kernel -> user-only, per-event loss counts ->
// none, build-id -> plain MMAP2, CLOCK_MONOTONIC record times -> the perf clock)
// walked on purpose through the open-function seam: a fake refuses what a given machine would
// refuse and passes everything else to the real syscall, so the rings really map.
// Needs perf events (software cpu-clock); skips with the reason where the kernel refuses them.
#include <linux/perf_event.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/event_spec.h"
#include "sampler/perf_event.h"
#include "sampler/session.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

struct Refusals {
  bool hardware = false;   // ENOENT for PERF_TYPE_HARDWARE (no PMU)
  bool kernel = false;     // EACCES unless exclude_kernel (perf_event_paranoid 2)
  bool lost_count = false; // EINVAL for PERF_FORMAT_LOST (kernel < 6.0)
  bool build_id = false;   // EINVAL for attr.build_id (kernel < 5.12)
  bool clockid = false;    // EINVAL for attr.use_clockid (kernel < 4.1)
  int everything = 0;      // an errno for every open
  std::vector<perf_event_attr> seen;
};

PerfEventOpenFn FakeKernel(Refusals* r) {
  return [r](perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
    r->seen.push_back(*attr);
    // The first refusal that applies, in the order a kernel checks: event, permission, attr.
    int err = r->everything;
    if (err == 0 && r->hardware && attr->type == PERF_TYPE_HARDWARE) err = ENOENT;
    if (err == 0 && r->kernel && !attr->exclude_kernel) err = EACCES;
    if (err == 0 && r->lost_count && (attr->read_format & PERF_FORMAT_LOST)) err = EINVAL;
    if (err == 0 && r->build_id && attr->build_id) err = EINVAL;
    if (err == 0 && r->clockid && attr->use_clockid) err = EINVAL;
    if (err != 0) {
      errno = err;
      return -1;
    }
    return SyscallPerfEventOpen(attr, pid, cpu, group_fd, flags);
  };
}

SessionOptions OwnProcess(Refusals* r, const char* event) {
  SessionOptions o;
  o.sampling.event = *ParseEventSpec(event);
  o.sampling.frequency_hz = 99;
  o.sampling.enable_on_exec = false;
  o.targets = {::getpid()};
  o.ring_pages = 8;
  o.open_fn = FakeKernel(r);
  return o;
}

class SessionFallbackTest : public ::testing::Test {
 protected:
  void SetUp() override { NP_SKIP_IF_NO_PERF(); }
};

TEST_F(SessionFallbackTest, EveryRungOfTheLadderInOrder) {
  Refusals r{.hardware = true, .kernel = true, .lost_count = true, .build_id = true,
             .clockid = true};
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(OwnProcess(&r, "cycles"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->event().name, "cpu-clock");
  EXPECT_FALSE((*s)->kernel_sampled());
  EXPECT_EQ((*s)->attr().build_id, 0u);
  EXPECT_EQ((*s)->attr().exclude_kernel, 1u);
  ASSERT_THAT((*s)->notes(), SizeIs(2));
  EXPECT_THAT((*s)->notes()[0], HasSubstr("cycles is not supported on this machine"));
  EXPECT_THAT((*s)->notes()[1], HasSubstr("kernel stacks are not sampled"));
  EXPECT_THAT((*s)->notes()[1], HasSubstr("perf_event_paranoid"));
  // The probe order: cycles, then cpu-clock with kernel, then user-only, then without loss
  // counts, then without build-id, then with the perf clock;
  // the first open that succeeds is reused for CPU 0.
  ASSERT_GE(r.seen.size(), 6u);
  EXPECT_EQ(r.seen[0].type, static_cast<uint32_t>(PERF_TYPE_HARDWARE));
  EXPECT_EQ(r.seen[1].type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(r.seen[1].exclude_kernel, 0u);
  EXPECT_EQ(r.seen[2].exclude_kernel, 1u);
  EXPECT_EQ(r.seen[2].read_format, static_cast<uint64_t>(PERF_FORMAT_LOST));
  EXPECT_EQ(r.seen[3].read_format, 0u);
  EXPECT_EQ(r.seen[3].build_id, 1u);
  EXPECT_EQ(r.seen[4].build_id, 0u);
  EXPECT_EQ(r.seen[4].use_clockid, 1u);
  EXPECT_EQ(r.seen[5].use_clockid, 0u);
  EXPECT_EQ((*s)->attr().use_clockid, 0u);
}

// A kernel before 6.0 has no per-event loss counts: only that is given up, silently (the rings'
// PERF_RECORD_LOST still count losses), and build-ids stay.
TEST_F(SessionFallbackTest, AKernelWithoutLossCountsKeepsTheRest) {
  Refusals r{.lost_count = true};
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(OwnProcess(&r, "cpu-clock"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->attr().read_format, 0u);
  EXPECT_EQ((*s)->attr().build_id, 1u);
  EXPECT_EQ((*s)->attr().use_clockid, 1u);
  EXPECT_THAT((*s)->notes(), SizeIs(0));
}

TEST_F(SessionFallbackTest, RecordTimesAreMonotonicWhereTheKernelAllowsIt) {
  Refusals r;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(OwnProcess(&r, "cpu-clock"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->attr().use_clockid, 1u);
  EXPECT_EQ((*s)->attr().clockid, CLOCK_MONOTONIC);
  EXPECT_THAT((*s)->notes(), SizeIs(0));
}

TEST_F(SessionFallbackTest, NothingToFallBackToIsAnError) {
  Refusals r{.everything = EACCES};
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(OwnProcess(&r, "cpu-clock"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("perf_event_open refused event 'cpu-clock'"));
}

TEST_F(SessionFallbackTest, SoftwareEventsDoNotFallBackToCpuClock) {
  Refusals r{.everything = ENOENT};
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(OwnProcess(&r, "page-faults"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("event 'page-faults' is not supported"));
}

TEST_F(SessionFallbackTest, ExitedProcessIsUnavailable) {
  Refusals r{.everything = ESRCH};
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(OwnProcess(&r, "cpu-clock"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("no process with PID"));
}

// --off-cpu: the switch event samples in kernel mode, so where the CPU event fell back to
// user-only sampling, the switch event cannot follow; the error names the setting to change.
TEST_F(SessionFallbackTest, OffCpuWithoutKernelEventsFailsAndSaysWhatToChange) {
  Refusals r{.kernel = true};
  SessionOptions o = OwnProcess(&r, "cpu-clock");
  o.sampling.off_cpu = true;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--off-cpu"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("perf_event_paranoid"));
}

TEST_F(SessionFallbackTest, OffCpuAddsASwitchEventPerCpuWithIdentifiers) {
  Refusals r;
  SessionOptions o = OwnProcess(&r, "cpu-clock");
  o.sampling.off_cpu = true;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE((*s)->off_cpu());
  size_t switch_events = 0;
  for (const perf_event_attr& a : r.seen) {
    EXPECT_TRUE(a.sample_type & PERF_SAMPLE_IDENTIFIER) << "both events share the rings";
    if (a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_CONTEXT_SWITCHES) {
      ++switch_events;
      EXPECT_EQ(a.sample_period, 1u);
      EXPECT_EQ(a.freq, 0u);
      EXPECT_EQ(a.context_switch, 1u);
      EXPECT_EQ(a.mmap, 0u) << "mapping records come from the sampling event only";
    }
  }
  // One probe, then one per CPU.
  EXPECT_EQ(switch_events, (*s)->ring_count() + 1);
}

TEST(PerfEventOpenErrorTest, OneMappingForEveryCaller) {
  perf_event_attr attr{};
  attr.freq = 1;
  attr.sample_freq = MaxSampleRate() + 1;
  EXPECT_THAT(std::string(PerfEventOpenError(EINVAL, attr, 1, 0, "cpu-clock").message()),
              HasSubstr("above the kernel's limit"));
  attr.sample_freq = 99;
  EXPECT_EQ(PerfEventOpenError(EINVAL, attr, 1, 0, "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PerfEventOpenError(EMFILE, attr, 1, 0, "x").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PerfEventOpenError(EOPNOTSUPP, attr, 1, 0, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(PerfEventOpenError(EPERM, attr, 1, 0, "x").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(PerfEventOpenError(ESRCH, attr, 1, 0, "x").code(), absl::StatusCode::kUnavailable);
  // Anything else keeps its errno's own code (absl::ErrnoToStatus).
  EXPECT_EQ(PerfEventOpenError(EBUSY, attr, 1, 0, "x").code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace nativeprof::sampler
