#include "unwind/alloc_tracker.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace nativeprof::unwind {
namespace {

constexpr uint32_t kPid = 42;

TEST(AllocTrackerTest, EverySampledAllocationWeighsOneWhenTheRateIsOne) {
  AllocTracker t(1);
  EXPECT_DOUBLE_EQ(t.WeightOf(16).bytes, 16.0);
  EXPECT_DOUBLE_EQ(t.WeightOf(16).count, 1.0);
  t.OnAlloc(0, kPid, 0x1000, 100, 1);
  t.OnAlloc(1, kPid, 0x2000, 50, 2);
  t.OnFree(kPid, 0x1000, /*temporary=*/false, 11);
  t.OnAlloc(1, kPid, 0x3000, 50, 12);
  t.OnFree(kPid, 0x3000, /*temporary=*/true, 13);
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

// Sampling by bytes, the per-site peak set is the one live at the preload's last peak mark (the
// exact heap's peak), not at the highest point of the sampled estimate, which noise decides:
// here a block sampled after the exact peak raises the estimate above the marked moment's.
TEST(AllocTrackerTest, PeakMarksDecideWhenTheSampledPeakSetIsTaken) {
  AllocTracker t(512 * 1024);
  t.OnAlloc(0, kPid, 0x1000, 1 << 20, 1);
  t.OnPeakMark(25);  // the exact peak: site 0's block live
  t.OnFree(kPid, 0x1000, /*temporary=*/false, 2);
  t.OnAlloc(1, kPid, 0x2000, 4 << 20, 3);  // a larger estimate, but no new exact peak
  t.OnFree(kPid, 0x2000, /*temporary=*/false, 4);
  t.Finish();
  ASSERT_EQ(t.sites().size(), 2u);
  EXPECT_GT(t.sites()[0].peak_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(t.sites()[1].peak_bytes, 0);
  // Without marks (every allocation sampled, where the estimate is exact) the estimate decides.
  AllocTracker exact(1);
  exact.OnAlloc(0, kPid, 0x1000, 1 << 20, 1);
  exact.OnFree(kPid, 0x1000, /*temporary=*/false, 2);
  exact.OnAlloc(1, kPid, 0x2000, 4 << 20, 3);
  exact.OnFree(kPid, 0x2000, /*temporary=*/false, 4);
  exact.Finish();
  EXPECT_DOUBLE_EQ(exact.sites()[0].peak_bytes, 0);
  EXPECT_DOUBLE_EQ(exact.sites()[1].peak_bytes, 4 << 20);
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
      t.OnAlloc(static_cast<uint32_t>(site), kPid, addr, sizes[site], /*time_ns=*/addr);
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
  t.OnFree(kPid, 0xdead, false, 5);
  EXPECT_EQ(t.unmatched_frees(), 1u);
  // An address allocated twice without a free in between (a lost free): the first is forgotten.
  t.OnAlloc(0, kPid, 0x10, 10, 1);
  t.OnAlloc(1, kPid, 0x10, 20, 2);
  t.Finish();
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 0);
  EXPECT_DOUBLE_EQ(t.sites()[1].live_bytes, 20);
}

// A fork's parent and child reuse each other's addresses: each block is its process's, and the
// child's frees of blocks copied at the fork are neither matched to the parent's nor unmatched.
TEST(AllocTrackerTest, BlocksArePerProcessAndAForkedChildFreesItsCopies) {
  AllocTracker t(1);
  constexpr uint32_t kChild = 43;
  t.OnAlloc(0, kPid, 0x10, 100, 1);  // live in the parent at the fork
  t.OnProcessForked(kChild);
  t.OnAlloc(1, kChild, 0x20, 30, 2);
  t.OnAlloc(0, kPid, 0x20, 40, 3);   // the same address in the parent
  t.OnFree(kChild, 0x10, false, 4);  // the child's copy of the parent's block
  t.OnFree(kChild, 0x20, false, 5);
  t.Finish();
  EXPECT_EQ(t.unmatched_frees(), 0u);
  EXPECT_EQ(t.inherited_frees(), 1u);
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 140);  // both of the parent's, leaked
  EXPECT_DOUBLE_EQ(t.sites()[1].live_bytes, 0);
  EXPECT_DOUBLE_EQ(t.peak_bytes(), 170);
}

// An exec ends the image: its blocks are leaked (never freed) but no longer live, so the next
// image's peak does not count them, and its addresses are its own.
TEST(AllocTrackerTest, AnExecEndsTheImagesBlocks) {
  AllocTracker t(1);
  t.OnAlloc(0, kPid, 0x10, 100, 1);
  t.OnImageEnded(kPid, 2);
  t.OnAlloc(1, kPid, 0x10, 60, 2);  // the new image, at the same address
  t.OnAlloc(1, kPid, 0x20, 30, 3);
  t.OnFree(kPid, 0x10, false, 4);
  t.Finish();
  EXPECT_EQ(t.unmatched_frees(), 0u);
  EXPECT_DOUBLE_EQ(t.peak_bytes(), 100);  // the first image's, not 100 + 90
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 100);  // leaked by the first image
  EXPECT_DOUBLE_EQ(t.sites()[0].peak_bytes, 100);
  EXPECT_DOUBLE_EQ(t.sites()[1].live_bytes, 30);
  EXPECT_DOUBLE_EQ(t.sites()[1].bytes, 90);
}

// A process that exits leaves the live heap with what it never freed, which stays leaked; a free
// stamped after its end (another of its threads, before it died too) still finds its block.
TEST(AllocTrackerTest, AnExitedProcessesBlocksLeaveTheLiveHeap) {
  constexpr uint32_t kChild = kPid + 1;
  AllocTracker t(1);
  t.OnAlloc(0, kChild, 0x10, 100, 1);
  t.OnAlloc(0, kChild, 0x20, 50, 2);
  t.OnImageEnded(kChild, 2);
  t.OnFree(kChild, 0x20, false, 3);  // late
  t.OnAlloc(1, kPid, 0x30, 80, 4);   // the parent, after the child is gone
  t.Finish();
  EXPECT_EQ(t.unmatched_frees(), 0u);
  EXPECT_DOUBLE_EQ(t.peak_bytes(), 150);  // the child's, not 100 + 80
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 100);  // leaked by the child
  EXPECT_DOUBLE_EQ(t.sites()[0].freed, 1);
  EXPECT_DOUBLE_EQ(t.sites()[0].lifetime_ns, 1);
  EXPECT_DOUBLE_EQ(t.sites()[1].live_bytes, 80);
}

// An ended image's block whose address the pid allocates again is gone: a later free of that
// address is the new block's.
TEST(AllocTrackerTest, AnAddressAllocatedAgainForgetsTheEndedBlock) {
  AllocTracker t(1);
  t.OnAlloc(0, kPid, 0x10, 100, 1);
  t.OnImageEnded(kPid, 2);
  t.OnAlloc(1, kPid, 0x10, 60, 2);
  t.OnFree(kPid, 0x10, false, 3);
  t.OnFree(kPid, 0x10, false, 4);  // a second free of it: no block left
  t.Finish();
  EXPECT_EQ(t.unmatched_frees(), 1u);
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 100);
  EXPECT_DOUBLE_EQ(t.sites()[1].live_bytes, 0);
}

// The blocks an ended image left are kept for a late free only for a while: a run of many
// processes that each exit holding their heap keeps the blocks of those still running.
TEST(AllocTrackerTest, EndedImagesBlocksAreForgottenAfterASecond) {
  AllocTracker t(1);
  for (uint32_t pid = 1; pid <= 3; ++pid) {
    const uint64_t start = pid * 2 * AllocTracker::kLateFreeNs;
    t.OnAlloc(0, pid, 0x10, 100, start);
    t.OnAlloc(0, pid, 0x20, 100, start);
    t.OnImageEnded(pid, start + 1);
    EXPECT_EQ(t.ended_blocks(), 2u);  // the earlier images' are gone
  }
  t.OnFree(1, 0x10, false, 7 * AllocTracker::kLateFreeNs);  // too late: not matched
  t.Finish();
  EXPECT_EQ(t.unmatched_frees(), 1u);
  EXPECT_DOUBLE_EQ(t.sites()[0].live_bytes, 600);  // every image's leak is still counted
}

}  // namespace
}  // namespace nativeprof::unwind
