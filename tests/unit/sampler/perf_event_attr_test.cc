// What the sampling and context-switch attributes ask the kernel for.
#include <linux/perf_event.h>

#include "gtest/gtest.h"
#include "sampler/perf_event.h"

namespace nativeprof::sampler {
namespace {

SamplingAttrOptions DwarfOffCpu(uint32_t switch_stack_bytes) {
  SamplingAttrOptions o;
  o.regs_user_mask = 0xff;
  o.stack_user_bytes = 8192;
  o.off_cpu = true;
  o.switch_stack_user_bytes = switch_stack_bytes;
  return o;
}

TEST(PerfEventAttrTest, SwitchSamplesWithTheFullStackCopyLeaveTheUserWalkToDwarf) {
  const perf_event_attr a = MakeContextSwitchAttr(DwarfOffCpu(8192));
  EXPECT_EQ(a.config, uint64_t{PERF_COUNT_SW_CONTEXT_SWITCHES});
  EXPECT_EQ(a.sample_period, 1u);
  EXPECT_EQ(a.sample_stack_user, 8192u);
  EXPECT_TRUE(a.sample_type & PERF_SAMPLE_CALLCHAIN);
  EXPECT_EQ(a.exclude_callchain_kernel, 0u);  // the call that blocked
  EXPECT_EQ(a.exclude_callchain_user, 1u);
  EXPECT_EQ(a.context_switch, 1u);
}

TEST(PerfEventAttrTest, SwitchSamplesWithASmallerCopyOrNoneKeepTheKernelsUserWalk) {
  const perf_event_attr a = MakeContextSwitchAttr(DwarfOffCpu(0));
  EXPECT_EQ(a.sample_stack_user, 0u);
  EXPECT_TRUE(a.sample_type & PERF_SAMPLE_STACK_USER);  // the layout both events share
  EXPECT_EQ(a.exclude_callchain_user, 0u);
  // --off-cpu-stack 1024: the walk finishes the stacks the copy cuts short.
  const perf_event_attr small = MakeContextSwitchAttr(DwarfOffCpu(1024));
  EXPECT_EQ(small.sample_stack_user, 1024u);
  EXPECT_EQ(small.exclude_callchain_user, 0u);

  SamplingAttrOptions fp;  // --call-graph fp: no copy at all
  fp.off_cpu = true;
  EXPECT_EQ(MakeContextSwitchAttr(fp).exclude_callchain_user, 0u);
}

TEST(PerfEventAttrTest, CpuSamplesKeepTheUserWalkToFinishDeepStacks) {
  const perf_event_attr a = MakeSamplingAttr(DwarfOffCpu(4096));
  EXPECT_EQ(a.exclude_callchain_user, 0u);
  EXPECT_EQ(a.context_switch, 0u);
  EXPECT_TRUE(a.sample_type & PERF_SAMPLE_IDENTIFIER);
}

}  // namespace
}  // namespace nativeprof::sampler
