#include "unwind/alloc_tracker.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace nativeprof::unwind {
namespace {

TEST(AllocTrackerTest, EverySampledAllocationWeighsOneWhenTheRateIsOne) {
  AllocTracker t(1);
  EXPECT_DOUBLE_EQ(t.WeightOf(16).bytes, 16.0);
  EXPECT_DOUBLE_EQ(t.WeightOf(16).count, 1.0);
  t.OnAlloc(0, 0x1000, 100, 1);
  t.OnAlloc(1, 0x2000, 50, 2);
  t.OnFree(0x1000, /*temporary=*/false, 11);
  t.OnAlloc(1, 0x3000, 50, 12);
  t.OnFree(0x3000, /*temporary=*/true, 13);
  t.Finish();
  ASSERT_EQ(t.sites().size(), 2u);
  EXPECT_DOUBLE_EQ(t.sites()[0].bytes, 100);
  EXPECT_DOUBLE_EQ(t.sites()[0].lifetime_ns, 10);
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 0);
  EXPECT_DOUBLE_EQ(t.sites()[1].count, 2);
  EXPECT_DOUBLE_EQ(t.sites()[1].temporary, 1);
  EXPECT_DOUBLE_EQ(t.sites()[1].live_bytes, 50);  // leaked
  // The peak was 150 bytes, when both first blocks were live.
  EXPECT_DOUBLE_EQ(t.peak_bytes(), 150);
  EXPECT_DOUBLE_EQ(t.sites()[0].peak_bytes, 100);
  EXPECT_DOUBLE_EQ(t.sites()[1].peak_bytes, 50);
}

TEST(AllocTrackerTest, WeightIsTheInverseOfTheSamplingProbability) {
  AllocTracker t(512 * 1024);
  // A block far larger than the rate is almost surely sampled: it weighs about its size.
  EXPECT_NEAR(t.WeightOf(64 << 20).bytes, 64 << 20, 1);
  // A small one stands for about `rate` bytes.
  EXPECT_NEAR(t.WeightOf(16).bytes, 512 * 1024 + 8, 1);
  EXPECT_NEAR(t.WeightOf(16).count, 512.0 * 1024 / 16 + 0.5, 0.01);
}

// Simulates the preload's Poisson sampling by bytes over a known mix: the weighted estimates
// must land on the true totals (the estimator is unbiased).
TEST(AllocTrackerTest, EstimatesOfSimulatedSamplingAreUnbiased) {
  const uint64_t rate = 64 * 1024;
  AllocTracker t(rate);
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> next(1.0 / static_cast<double>(rate));
  double until = next(rng);
  const uint64_t sizes[] = {16, 4096, 1 << 20};
  const uint64_t counts[] = {4000000, 16000, 64};  // about 1,000 samples each
  uint64_t addr = 0x10000;
  double true_bytes[3] = {};
  for (int site = 0; site < 3; ++site) {
    for (uint64_t i = 0; i < counts[site]; ++i) {
      true_bytes[site] += static_cast<double>(sizes[site]);
      until -= static_cast<double>(sizes[site]);
      if (until > 0) continue;
      until = next(rng);
      t.OnAlloc(static_cast<uint32_t>(site), addr, sizes[site], /*time_ns=*/addr);
      ++addr;
    }
  }
  for (int site = 0; site < 3; ++site) {
    SCOPED_TRACE(site);
    EXPECT_NEAR(t.sites()[static_cast<size_t>(site)].bytes, true_bytes[site],
                0.1 * true_bytes[site]);
    EXPECT_NEAR(t.sites()[static_cast<size_t>(site)].count, static_cast<double>(counts[site]),
                0.1 * static_cast<double>(counts[site]));
  }
}

TEST(AllocTrackerTest, FreesOfUnknownBlocksAreCountedNotApplied) {
  AllocTracker t(1);
  t.OnFree(0xdead, false, 5);
  EXPECT_EQ(t.unmatched_frees(), 1u);
  // An address allocated twice without a free in between (a lost free): the first is forgotten.
  t.OnAlloc(0, 0x10, 10, 1);
  t.OnAlloc(1, 0x10, 20, 2);
  t.Finish();
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 0);
  EXPECT_DOUBLE_EQ(t.sites()[1].live_bytes, 20);
}

}  // namespace
}  // namespace nativeprof::unwind
