#include "preload/record_clock.h"

#include <cstdint>
#include <memory>
#include <new>

#include "gtest/gtest.h"

namespace nativeprof::preload {
namespace {

// A TSC at `ticks_per_ns` from `tsc0` and CLOCK_MONOTONIC from `ns0`, both at the test's notion
// of now (`now_ns` plus the time `stolen_ns` that interruptions took). `pair_gap_ns` passes inside
// each MonotonicNs call, so the TSC read after it sees it; with `interrupt_alternate` every other
// reading is interrupted there for 10 ms (the writer preempted between its two TSC reads).
struct FakeSources {
  double ticks_per_ns = 2.5;
  uint64_t tsc0 = 1'000'000'000;
  uint64_t ns0 = 7'000'000'000;
  uint64_t now_ns = 0;
  uint64_t stolen_ns = 0;
  uint64_t pair_gap_ns = 20;
  bool interrupt_alternate = false;
  int monotonic_reads = 0;
  int interrupted = 0;

  uint64_t Truth() const { return ns0 + now_ns + stolen_ns; }
  uint64_t Tsc() const {
    return tsc0 + static_cast<uint64_t>(static_cast<double>(now_ns + stolen_ns) * ticks_per_ns);
  }
  uint64_t MonotonicNs() {
    ++monotonic_reads;
    const uint64_t t = Truth();
    const bool interrupt = interrupt_alternate && monotonic_reads % 2 == 0;
    stolen_ns += interrupt ? 10'000'000 : pair_gap_ns;
    interrupted += interrupt ? 1 : 0;
    return t;
  }
};

class RecordClockTest : public ::testing::Test {
 protected:
  RecordClockTest() : control_(new alloc_channel::Control()) {}
  alloc_channel::Control& c() { return *control_; }
  std::unique_ptr<alloc_channel::Control> control_;
};

TEST_F(RecordClockTest, WithoutTheTscEveryRecordReadsTheClock) {
  FakeSources s;
  c().tsc_clock = 0;
  for (int i = 0; i < 10; ++i) {
    s.now_ns = 1000 * static_cast<uint64_t>(i);
    const uint64_t truth = s.Truth();
    EXPECT_EQ(NextRecordTime(c(), s), truth);
  }
  EXPECT_EQ(s.monotonic_reads, 10);
}

// Records 1 us apart for 20 ms: after the first millisecond (which measures the TSC's rate) the
// clock is read about once a millisecond, and every time is within a microsecond of the truth
// and never goes back.
TEST_F(RecordClockTest, ExtrapolatesFromTheTscBetweenReadings) {
  FakeSources s;
  c().tsc_clock = 1;
  uint64_t previous = 0;
  int reads_in_first_ms = 0;
  for (uint64_t us = 0; us < 20'000; ++us) {
    s.now_ns = us * 1000;
    const uint64_t truth = s.Truth();
    const uint64_t t = NextRecordTime(c(), s);
    ASSERT_GE(t, previous) << us;
    ASSERT_LE(t > truth ? t - truth : truth - t, 1000u) << "at " << us << " us";
    previous = t;
    if (us == 1000) reads_in_first_ms = s.monotonic_reads;
  }
  EXPECT_GE(reads_in_first_ms, 900);  // every record until the rate is known
  EXPECT_LE(s.monotonic_reads - reads_in_first_ms, 25) << "about one reading a millisecond";
}

// A reading interrupted between its two TSC reads (here by 10 ms, every other reading from the
// second millisecond on) must not set the rate: the times stay right, and the next clean reading
// calibrates.
TEST_F(RecordClockTest, AnInterruptedReadingDoesNotSetTheRate) {
  FakeSources s;
  c().tsc_clock = 1;
  for (uint64_t us = 0; us < 10'000; ++us) {
    s.now_ns = us * 1000;
    s.interrupt_alternate = us >= 2000;
    const uint64_t truth = s.Truth();
    const uint64_t t = NextRecordTime(c(), s);
    ASSERT_LE(t > truth ? t - truth : truth - t, 1000u) << "at " << us << " us";
  }
  EXPECT_GE(s.interrupted, 6);
  // 0.4 ns a tick, as 32.32 fixed point, within 0.1 %.
  EXPECT_NEAR(static_cast<double>(c().clock_mult.load()) / 4294967296.0, 0.4, 0.0004);
}

// Records of another writer with a later time (its reading came after this one's extrapolation
// started) keep the ring in time order: a time never goes below the last one written.
TEST_F(RecordClockTest, NeverGoesBelowTheLastTimeWritten) {
  FakeSources s;
  c().tsc_clock = 1;
  const uint64_t first = NextRecordTime(c(), s);
  c().last_time_ns.store(first + 5000);
  EXPECT_EQ(NextRecordTime(c(), s), first + 5000);
  c().tsc_clock = 0;
  EXPECT_EQ(NextRecordTime(c(), s), first + 5000);
}

}  // namespace
}  // namespace nativeprof::preload
