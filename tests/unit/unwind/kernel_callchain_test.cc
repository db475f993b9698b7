#include "unwind/kernel_callchain.h"

#include <linux/perf_event.h>

#include <fstream>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::unwind {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
constexpr uint64_t kUser = static_cast<uint64_t>(PERF_CONTEXT_USER);
constexpr uint64_t kHv = static_cast<uint64_t>(PERF_CONTEXT_HV);
constexpr uint64_t kGuestUser = static_cast<uint64_t>(PERF_CONTEXT_GUEST_USER);

std::vector<uint64_t> V(std::span<const uint64_t> s) { return {s.begin(), s.end()}; }

TEST(SplitCallchainTest, KernelThenUser) {
  const std::vector<uint64_t> raw = {kKernel, 0xffffffff81000100, 0xffffffff81000200,
                                     kUser,   0x401000,           0x402000};
  const KernelCallchain c = SplitCallchain(raw);
  EXPECT_THAT(V(c.kernel), ElementsAre(0xffffffff81000100, 0xffffffff81000200));
  EXPECT_THAT(V(c.user), ElementsAre(0x401000, 0x402000));
  EXPECT_EQ(c.markers, 2u);
  EXPECT_EQ(c.frames, 4u);
}

TEST(SplitCallchainTest, UserOnlyAndEmpty) {
  const std::vector<uint64_t> raw = {kUser, 0x10, 0x20};
  const KernelCallchain c = SplitCallchain(raw);
  EXPECT_THAT(V(c.kernel), IsEmpty());
  EXPECT_THAT(V(c.user), ElementsAre(0x10, 0x20));
  const KernelCallchain none = SplitCallchain({});
  EXPECT_THAT(V(none.kernel), IsEmpty());
  EXPECT_THAT(V(none.user), IsEmpty());
  EXPECT_EQ(none.markers, 0u);
  EXPECT_EQ(none.frames, 0u);
}

TEST(SplitCallchainTest, EntriesOutsideKernelAndUserAreInNeitherPart) {
  // Before any marker, under a hypervisor or guest marker, or in a second user context.
  const std::vector<uint64_t> raw = {0x5, kHv, 0x6, kUser, 0x30, 0x40, kGuestUser, 0x7,
                                     kUser, 0x8};
  const KernelCallchain c = SplitCallchain(raw);
  EXPECT_THAT(V(c.kernel), IsEmpty());
  EXPECT_THAT(V(c.user), ElementsAre(0x30, 0x40));
  EXPECT_EQ(c.markers, 4u);
  EXPECT_EQ(c.frames, 6u);  // still counted: the kernel counted them against its limit
}

TEST(SplitCallchainTest, ChainEndingInAMarkerHasAnEmptyPart) {
  const std::vector<uint64_t> raw = {kKernel, 0xffffffff81000100, kUser};
  const KernelCallchain c = SplitCallchain(raw);
  EXPECT_THAT(V(c.kernel), ElementsAre(0xffffffff81000100));
  EXPECT_THAT(V(c.user), IsEmpty());
}

TEST(SplitCallchainTest, MaxStackCountsFramesOfBothPartsNotMarkers) {
  // 2 kernel + 125 user frames = 127 (plus 2 markers): the kernel stopped there.
  std::vector<uint64_t> raw = {kKernel, 0xffffffff81000100, 0xffffffff81000200, kUser};
  for (int i = 0; i < 125; ++i) raw.push_back(0x1000 + i);
  EXPECT_TRUE(SplitCallchain(raw).CutAtMaxStack(127));
  EXPECT_FALSE(SplitCallchain(raw).CutAtMaxStack(128));
  raw.pop_back();  // 126 frames in 128 entries: complete
  EXPECT_FALSE(SplitCallchain(raw).CutAtMaxStack(127));
}

TEST(SplitCallchainTest, KernelMaxStackIsTheSysctl) {
  std::ifstream sysctl("/proc/sys/kernel/perf_event_max_stack");
  size_t value = 0;
  if (!(sysctl >> value) || value == 0) value = kDefaultKernelMaxStack;
  EXPECT_EQ(KernelMaxStack(), value);
}

TEST(AppendCallchainFramesTest, FirstEntryIsTheInstructionPointer) {
  UnwoundStack s;
  const std::vector<uint64_t> kernel = {0xffffffff81000100, 0xffffffff81000200};
  const std::vector<uint64_t> user = {0x401000, 0x402000};
  EXPECT_TRUE(AppendCallchainFrames(kernel, /*kernel=*/true, &s));
  EXPECT_TRUE(AppendCallchainFrames(user, /*kernel=*/false, &s));
  ASSERT_EQ(s.frames.size(), 4u);
  EXPECT_EQ(s.frames[0].kind, FrameAddressKind::kInstructionPointer);
  EXPECT_TRUE(s.frames[0].kernel);
  EXPECT_EQ(s.frames[1].kind, FrameAddressKind::kReturnAddress);
  EXPECT_EQ(s.frames[2].kind, FrameAddressKind::kInstructionPointer);
  EXPECT_FALSE(s.frames[2].kernel);
  EXPECT_EQ(s.frames[3].avma, 0x402000u);
}

TEST(AppendCallchainFramesTest, StopsAtTheFrameLimit) {
  UnwoundStack s;
  std::vector<uint64_t> part(kMaxFrames, 0x1000);
  EXPECT_TRUE(AppendCallchainFrames(part, /*kernel=*/false, &s));
  EXPECT_FALSE(AppendCallchainFrames(std::vector<uint64_t>{0x2000}, /*kernel=*/false, &s));
  EXPECT_EQ(s.frames.size(), kMaxFrames);
}

}  // namespace
}  // namespace nativeprof::unwind
