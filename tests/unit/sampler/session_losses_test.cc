// Losses of a ring that nobody drained until sampling stopped. The kernel reports a full ring's
// losses in a PERF_RECORD_LOST written once a later record fits, so a ring still full when its
// events are disabled (a drain thread that never got a CPU) would report none: a CI run lost all
// but 8 records of 1.3 s and said "0 lost". The events' own counts (PERF_FORMAT_LOST) say how many.
#include <linux/perf_event.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>

#include "gtest/gtest.h"
#include "sampler/event_spec.h"
#include "sampler/session.h"
#include "tests/testing/test_support.h"
#include "tests/unit/sampler/recording_sink.h"

namespace nativeprof::sampler {
namespace {

// Burns this thread's CPU for `ms` milliseconds of its own CPU time.
void SpinCpuMs(int ms) {
  timespec start{}, now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  volatile uint64_t x = 0;
  do {
    for (int i = 0; i < 10000; ++i) x = x + i;
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

TEST(SessionLossesTest, ARingStillFullWhenSamplingStopsReportsWhatItLost) {
  NP_SKIP_IF_NO_PERF();
  SessionOptions o;
  o.sampling.event = *ParseEventSpec("cpu-clock");
  o.sampling.frequency_hz = 999;
  o.sampling.enable_on_exec = false;
  o.sampling.include_kernel = false;
  // 8 KiB stack copies in 32 KiB rings (one per CPU): each is full after 3 samples.
  o.sampling.regs_user_mask = 1;
  o.sampling.stack_user_bytes = 8192;
  o.targets = {static_cast<pid_t>(::gettid())};
  o.ring_pages = 8;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Open(o);
  ASSERT_TRUE(s.ok()) << s.status();
  if (!((*s)->attr().read_format & PERF_FORMAT_LOST)) {
    GTEST_SKIP() << "this kernel has no PERF_FORMAT_LOST (Linux 6.0+)";
  }
  ASSERT_TRUE((*s)->Enable().ok());
  SpinCpuMs(200);  // ~200 samples at 999 Hz, never drained
  ASSERT_TRUE((*s)->Disable().ok());
  RecordingSink sink;
  (*s)->Flush(sink);
  uint64_t lost = 0;
  for (const LostView& l : sink.losts) lost += l.lost;
  SCOPED_TRACE(::testing::Message() << sink.samples.size() << " samples, " << lost << " lost");
  EXPECT_LE(sink.samples.size(), 3 * (*s)->ring_count());
  // The timer fires at ~999 Hz of this thread's CPU time; a loaded machine may stretch it, never
  // shrink it by half.
  EXPECT_GE(sink.samples.size() + lost, 100u);
  // A second flush reports nothing twice.
  RecordingSink again;
  (*s)->Flush(again);
  EXPECT_TRUE(again.losts.empty());
}

}  // namespace
}  // namespace nativeprof::sampler
