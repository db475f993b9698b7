#include "unwind/callchain_unwinder.h"

#include <linux/perf_event.h>

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::unwind {
namespace {

constexpr uint64_t kKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
constexpr uint64_t kUser = static_cast<uint64_t>(PERF_CONTEXT_USER);
constexpr uint64_t kHv = static_cast<uint64_t>(PERF_CONTEXT_HV);

struct F {
  uint64_t avma;
  FrameAddressKind kind;
  bool kernel;
  friend bool operator==(const F&, const F&) = default;
  friend std::ostream& operator<<(std::ostream& os, const F& f) {
    return os << std::hex << f.avma
              << (f.kind == FrameAddressKind::kInstructionPointer ? " ip" : " ra")
              << (f.kernel ? " k" : " u");
  }
};
std::vector<F> Frames(const UnwoundStack& s) {
  std::vector<F> out;
  for (const Frame& f : s.frames) out.push_back({f.avma, f.kind, f.kernel});
  return out;
}

UnwoundStack Unwind(const std::vector<uint64_t>& chain, uint64_t ip = 0) {
  sampler::SampleView s;
  s.ip = ip;
  s.callchain = chain;
  // The kernel's default limit, not this machine's sysctl: the expectations below assume 127.
  CallchainUnwinder u(kDefaultKernelMaxStack);
  UnwoundStack out;
  out.frames.push_back(Frame{0xdead, FrameAddressKind::kReturnAddress, false});  // must be cleared
  out.end = StackEnd::kBadFrame;
  u.Unwind(s, ProcessView{}, &out);
  return out;
}

using ::testing::ElementsAre;
constexpr FrameAddressKind kIp = FrameAddressKind::kInstructionPointer;
constexpr FrameAddressKind kRa = FrameAddressKind::kReturnAddress;

TEST(CallchainUnwinderTest, SplitsKernelAndUserAndMarksFirstFrames) {
  UnwoundStack s = Unwind({kKernel, 0xffffffff81000100, 0xffffffff81000200, kUser, 0x401000,
                           0x402000, 0x403000});
  EXPECT_THAT(Frames(s), ElementsAre(F{0xffffffff81000100, kIp, true},
                                     F{0xffffffff81000200, kRa, true}, F{0x401000, kIp, false},
                                     F{0x402000, kRa, false}, F{0x403000, kRa, false}));
  EXPECT_EQ(s.end, StackEnd::kComplete);
  EXPECT_FALSE(s.spliced);
}

TEST(CallchainUnwinderTest, UserOnlyChain) {
  UnwoundStack s = Unwind({kUser, 0x10, 0x20});
  EXPECT_THAT(Frames(s), ElementsAre(F{0x10, kIp, false}, F{0x20, kRa, false}));
}

TEST(CallchainUnwinderTest, EntriesOutsideKernelOrUserContextAreDropped) {
  // Leading entries without a marker, and a hypervisor context, are not attributable.
  UnwoundStack s = Unwind({0x5, kHv, 0x6, kUser, 0x30, 0x40});
  EXPECT_THAT(Frames(s), ElementsAre(F{0x30, kIp, false}, F{0x40, kRa, false}));
}

TEST(CallchainUnwinderTest, EmptyCallchainGivesTheIpOnly) {
  UnwoundStack s = Unwind({}, 0x4242);
  EXPECT_THAT(Frames(s), ElementsAre(F{0x4242, kIp, false}));
  EXPECT_EQ(s.end, StackEnd::kNoUnwindInfo);
}

TEST(CallchainUnwinderTest, LongUserChainIsMaxDepth) {
  std::vector<uint64_t> chain = {kUser};
  for (int i = 0; i < 127; ++i) chain.push_back(0x1000 + i);
  EXPECT_EQ(Unwind(chain).end, StackEnd::kMaxDepth);
  chain.pop_back();
  EXPECT_EQ(Unwind(chain).end, StackEnd::kComplete);
}

TEST(CallchainUnwinderTest, FrameLimitIsEnforced) {
  std::vector<uint64_t> chain = {kKernel};
  for (size_t i = 0; i < kMaxFrames + 10; ++i) chain.push_back(0xffffffff81000000 + i);
  UnwoundStack s = Unwind(chain);
  EXPECT_EQ(s.frames.size(), kMaxFrames);
  EXPECT_EQ(s.end, StackEnd::kMaxDepth);
}

TEST(CallchainUnwinderTest, AppendCallchainKernelOnly) {
  UnwoundStack s;
  const std::vector<uint64_t> raw = {kKernel, 0xffff1, kUser, 0x1, 0x2};
  const KernelCallchain chain = SplitCallchain(raw);
  AppendCallchainFrames(chain.kernel, /*kernel=*/true, &s);
  size_t user = chain.user.size();
  EXPECT_EQ(user, 2u);
  EXPECT_THAT(Frames(s), ElementsAre(F{0xffff1, kIp, true}));
}

TEST(CallchainUnwinderTest, LookupAvmaStepsBackOnlyForReturnAddresses) {
  EXPECT_EQ(LookupAvma(Frame{0x1000, kIp, false}), 0x1000u);
  EXPECT_EQ(LookupAvma(Frame{0x1000, kRa, false}), 0xfffu);
  EXPECT_EQ(LookupAvma(Frame{0xffffffff81000010, kRa, true}), 0xffffffff8100000fu);
}

}  // namespace
}  // namespace nativeprof::unwind
