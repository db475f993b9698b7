#include "unwind/stack_collector.h"

#include <linux/perf_event.h>

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/record_parser.h"
#include "tests/testing/record_builder.h"
#include "unwind/callchain_unwinder.h"

namespace nativeprof::unwind {
namespace {

using ::nativeprof::testing::CommBuilder;
using ::nativeprof::testing::ExitBuilder;
using ::nativeprof::testing::ForkBuilder;
using ::nativeprof::testing::FramePointerFormat;
using ::nativeprof::testing::LostBuilder;
using ::nativeprof::testing::MmapBuilder;
using ::nativeprof::testing::RecordBytes;
using ::nativeprof::testing::SampleBuilder;
using ::nativeprof::testing::ThrottleBuilder;
using ::testing::ElementsAre;
using ::testing::Pair;

constexpr uint64_t kKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
constexpr uint64_t kUser = static_cast<uint64_t>(PERF_CONTEXT_USER);

// The kernel's callchain as the frames, marked as replayed from memo entry `entry` (0: walked),
// as DwarfUnwinder marks a stack its memo gave whole.
class TaggingUnwinder final : public Unwinder {
 public:
  void Unwind(const sampler::SampleView& sample, const ProcessView& process,
              UnwoundStack* out) override {
    inner_.Unwind(sample, process, out);
    out->replayed_from = entry;
  }
  uint64_t entry = 0;

 private:
  CallchainUnwinder inner_;
};

class StackCollectorTest : public ::testing::Test {
 protected:
  explicit StackCollectorTest(bool timeline = true) : collector_(&unwinder_, timeline) {}

  void Feed(const RecordBytes& r) {
    absl::StatusOr<sampler::ParseOutcome> o =
        sampler::ParseRecord(std::span<const uint8_t>(r.data(), r.size()), format_, collector_);
    ASSERT_TRUE(o.ok()) << o.status();
    ASSERT_EQ(*o, sampler::ParseOutcome::kDelivered);
  }
  void Sample(uint32_t pid, uint32_t tid, std::vector<uint64_t> chain, uint64_t period = 1,
              uint64_t time = 0) {
    Feed(SampleBuilder(format_).Pid(pid).Tid(tid).Ip(chain.size() > 1 ? chain[1] : 0)
             .Period(period).Time(time).Callchain(std::move(chain)).Build());
  }
  // /bin/app mapped at 0x400000-0x402000 from file offset 0x1000.
  void MapApp(uint32_t pid) {
    Feed(MmapBuilder(format_).Pid(pid).Tid(pid).Start(0x400000).Len(0x2000).Pgoff(0x1000)
             .Dev(8, 1).Inode(42).Filename("/bin/app").Build());
  }
  std::vector<CollectedFrame> FramesOf(const CollectedStack& s) const {
    const auto& all = collector_.frames();
    return std::vector<CollectedFrame>(all.begin() + s.first_frame,
                                       all.begin() + s.first_frame + s.frame_count);
  }
  sampler::ModuleId AppModule() const {
    const sampler::Process* p = collector_.processes().Find(1);
    return p->address_space.Find(0x400000)->module;
  }

  sampler::SampleFormat format_ = FramePointerFormat();
  TaggingUnwinder unwinder_;
  StackCollector collector_;
};

// A frame of `module` at `address`: a file offset in a mapped module, else an avma.
CollectedFrame CF(uint64_t address, sampler::ModuleId module) {
  if (module == kKernelModule) return CollectedFrame::Kernel(address);
  if (module == sampler::kNoModule) return CollectedFrame::Unmapped(address);
  return CollectedFrame::InModule(module, address);
}

TEST_F(StackCollectorTest, IdenticalSamplesInternToOneStack) {
  MapApp(1);
  Sample(1, 1, {kUser, 0x400100, 0x401000}, 1000, 10);
  Sample(1, 1, {kUser, 0x400100, 0x401000}, 2500, 20);
  ASSERT_EQ(collector_.stacks().size(), 1u);
  const CollectedStack& s = collector_.stacks()[0];
  EXPECT_EQ(s.samples, 2u);
  EXPECT_EQ(s.weight, 3500u);
  EXPECT_EQ(s.pid, 1);
  EXPECT_EQ(s.tid, 1);
  EXPECT_EQ(collector_.frames().size(), 2u) << "frames of an interned stack are stored once";
  EXPECT_EQ(collector_.stats().samples, 2u);
  EXPECT_EQ(collector_.stats().frames, 4u);
  EXPECT_EQ(collector_.stats().first_time_ns, 10u);
  EXPECT_EQ(collector_.stats().last_time_ns, 20u);
  EXPECT_EQ(collector_.stats().ends[static_cast<size_t>(StackEnd::kComplete)], 2u);
}

TEST_F(StackCollectorTest, DifferentThreadsOrFramesAreDifferentStacks) {
  MapApp(1);
  Sample(1, 1, {kUser, 0x400100, 0x401000});
  Sample(1, 2, {kUser, 0x400100, 0x401000});
  Sample(1, 1, {kUser, 0x400108, 0x401000});
  Sample(1, 1, {kUser, 0x400100, 0x401000});
  ASSERT_EQ(collector_.stacks().size(), 3u);
  EXPECT_EQ(collector_.stacks()[0].samples, 2u);
  EXPECT_EQ(collector_.stacks()[1].tid, 2);
  EXPECT_EQ(collector_.stacks()[1].samples, 1u);
  EXPECT_EQ(collector_.stacks()[2].samples, 1u);
}

// Two threads with the same frames are two stacks over one copy of the frames; a stack whose
// frames differ gets a copy of its own.
TEST_F(StackCollectorTest, StacksWithEqualFramesShareThem) {
  MapApp(1);
  Sample(1, 1, {kUser, 0x400100, 0x401000});
  Sample(1, 2, {kUser, 0x400100, 0x401000});
  Sample(1, 3, {kUser, 0x400108, 0x401000});
  ASSERT_EQ(collector_.stacks().size(), 3u);
  EXPECT_EQ(collector_.frames().size(), 4u);
  const CollectedStack& a = collector_.stacks()[0];
  const CollectedStack& b = collector_.stacks()[1];
  EXPECT_EQ(a.first_frame, b.first_frame);
  EXPECT_EQ(b.tid, 2);
  EXPECT_THAT(FramesOf(a), ElementsAre(CF(0x1100, AppModule()), CF(0x1fff, AppModule())));
  EXPECT_THAT(FramesOf(collector_.stacks()[2]),
              ElementsAre(CF(0x1108, AppModule()), CF(0x1fff, AppModule())));
}

// The leaf is looked up at its own address, return addresses at avma - 1 (inside the call).
// A return address one past the end of a mapping still belongs to it; one at its very start
// belongs to whatever precedes it.
TEST_F(StackCollectorTest, FramesResolveToModuleAndFileOffset) {
  MapApp(1);
  Sample(1, 1, {kUser, 0x400100, 0x401000, 0x402000, 0x400000});
  ASSERT_EQ(collector_.stacks().size(), 1u);
  const sampler::ModuleId app = AppModule();
  EXPECT_EQ(collector_.modules().Get(app).path, "/bin/app");
  EXPECT_THAT(FramesOf(collector_.stacks()[0]),
              ElementsAre(CF(0x1100, app), CF(0x1fff, app), CF(0x2fff, app),
                          CF(0x3fffff, sampler::kNoModule)));
  EXPECT_EQ(collector_.stats().unmapped_frames, 1u);
}

TEST_F(StackCollectorTest, UnmappedAndKernelFrames) {
  MapApp(1);
  Sample(1, 1, {kKernel, 0xffffffff81000100, 0xffffffff81000200, kUser, 0x7000, 0x400100});
  ASSERT_EQ(collector_.stacks().size(), 1u);
  EXPECT_THAT(FramesOf(collector_.stacks()[0]),
              ElementsAre(CF(0xffffffff81000100, kKernelModule),
                          CF(0xffffffff810001ff, kKernelModule), CF(0x7000, sampler::kNoModule),
                          CF(0x10ff, AppModule())));
  EXPECT_EQ(collector_.stats().kernel_frames, 2u);
  EXPECT_EQ(collector_.stats().unmapped_frames, 1u);
}

TEST_F(StackCollectorTest, EmptyCallchainKeepsTheIp) {
  MapApp(1);
  Feed(SampleBuilder(format_).Pid(1).Tid(1).Ip(0x400200).Build());
  ASSERT_EQ(collector_.stacks().size(), 1u);
  EXPECT_THAT(FramesOf(collector_.stacks()[0]), ElementsAre(CF(0x1200, AppModule())));
  EXPECT_EQ(collector_.stats().ends[static_cast<size_t>(StackEnd::kNoUnwindInfo)], 1u);
}

TEST_F(StackCollectorTest, ThreadNamesComeFromComm) {
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("app").Exec(true).Build());
  MapApp(1);
  Sample(1, 1, {kUser, 0x400100});
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("renamed").Build());
  Sample(1, 1, {kUser, 0x400100});
  ASSERT_EQ(collector_.stacks().size(), 2u) << "the thread name is part of the stack";
  const auto& names = collector_.thread_names();
  EXPECT_EQ(names[collector_.stacks()[0].thread_name], "app");
  EXPECT_EQ(names[collector_.stacks()[1].thread_name], "renamed");
}

// The collector remembers each thread's process and name by tid modulo a small table: tids that
// share an entry must not borrow each other's, and a thread created later gets its own name.
TEST_F(StackCollectorTest, ThreadsSharingACacheEntryKeepTheirNames) {
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("first").Exec(true).Build());
  Feed(CommBuilder(format_).Pid(65).Tid(65).Comm("second").Exec(true).Build());
  Feed(CommBuilder(format_).Pid(129).Tid(129).Comm("third").Exec(true).Build());
  for (int i = 0; i < 3; ++i) {
    Sample(1, 1, {kUser, 0x400100});
    Sample(65, 65, {kUser, 0x400100});
    Sample(129, 129, {kUser, 0x400100});
  }
  Feed(ForkBuilder(format_).Pid(1).Ppid(1).Tid(193).Ptid(1).Build());  // a thread of pid 1
  Feed(CommBuilder(format_).Pid(1).Tid(193).Comm("worker").Build());
  Sample(1, 193, {kUser, 0x400100});
  ASSERT_EQ(collector_.stacks().size(), 4u);
  const auto& names = collector_.thread_names();
  std::vector<std::pair<int32_t, std::string>> seen;
  for (const CollectedStack& st : collector_.stacks()) {
    seen.emplace_back(st.tid, names[st.thread_name]);
    EXPECT_EQ(st.samples, st.tid == 193 ? 1u : 3u);
  }
  EXPECT_THAT(seen, ElementsAre(Pair(1, "first"), Pair(65, "second"), Pair(129, "third"),
                                Pair(193, "worker")));
  EXPECT_EQ(collector_.processes().thread_count(), 4u);
}

TEST_F(StackCollectorTest, ForkedChildResolvesThroughCopiedMappings) {
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("app").Exec(true).Build());
  MapApp(1);
  Feed(ForkBuilder(format_).Pid(2).Ppid(1).Tid(2).Ptid(1).Build());
  Sample(2, 2, {kUser, 0x400100});
  ASSERT_EQ(collector_.stacks().size(), 1u);
  EXPECT_THAT(FramesOf(collector_.stacks()[0]), ElementsAre(CF(0x1100, AppModule())));
  EXPECT_EQ(collector_.thread_names()[collector_.stacks()[0].thread_name], "app");
}

TEST_F(StackCollectorTest, ExecForgetsOldMappings) {
  MapApp(1);
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("new").Exec(true).Build());
  Sample(1, 1, {kUser, 0x400100});
  EXPECT_THAT(FramesOf(collector_.stacks()[0]), ElementsAre(CF(0x400100, sampler::kNoModule)));
}

TEST_F(StackCollectorTest, LostAndThrottleAreCounted) {
  Feed(LostBuilder(format_).Lost(5).Build());
  Feed(LostBuilder(format_).Lost(2).Build());
  Feed(LostBuilder(format_).SamplesOnly().Lost(3).Build());
  Feed(ThrottleBuilder(true, format_).Build());
  Feed(ThrottleBuilder(false, format_).Build());
  EXPECT_EQ(collector_.stats().lost_records, 7u);
  EXPECT_EQ(collector_.stats().lost_samples, 3u);
  EXPECT_EQ(collector_.stats().throttled, 1u);
  EXPECT_EQ(collector_.stats().samples, 0u);
}

TEST_F(StackCollectorTest, TimelineKeepsEverySampleInArrivalOrder) {
  MapApp(1);
  Sample(1, 1, {kUser, 0x400100}, 1, 300);
  Sample(1, 1, {kUser, 0x400200}, 1, 100);
  Sample(1, 1, {kUser, 0x400100}, 1, 200);
  EXPECT_THAT(collector_.timeline(), ElementsAre(Pair(300, 0), Pair(100, 1), Pair(200, 0)));
  EXPECT_EQ(collector_.stats().first_time_ns, 100u);
  EXPECT_EQ(collector_.stats().last_time_ns, 300u);
}

// A stack replayed from a memo entry that was interned before for the same thread is that stack
// again, its frames not looked up: the collector trusts the id, so frames that differ under the
// same id (which DwarfUnwinder never gives) show that the shortcut was taken. The frame counts
// still grow as if the frames had been resolved.
TEST_F(StackCollectorTest, AReplayedStackIsInternedOncePerThread) {
  MapApp(1);
  unwinder_.entry = 7;
  Sample(1, 1, {kUser, 0x400100, 0x7000});
  Sample(1, 1, {kUser, 0x400200, 0x7000});
  ASSERT_EQ(collector_.stacks().size(), 1u);
  EXPECT_EQ(collector_.stacks()[0].samples, 2u);
  EXPECT_EQ(collector_.stats().frames, 4u);
  EXPECT_EQ(collector_.stats().unmapped_frames, 2u);

  // Another thread or name, or another entry: resolved and interned as usual.
  Sample(1, 2, {kUser, 0x400100, 0x7000});
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("renamed").Build());
  Sample(1, 1, {kUser, 0x400100, 0x7000});
  unwinder_.entry = 7 + 256;  // the same slot of the collector's table
  Sample(1, 1, {kUser, 0x400200, 0x7000});
  unwinder_.entry = 0;
  Sample(1, 1, {kUser, 0x400100, 0x7000});
  ASSERT_EQ(collector_.stacks().size(), 4u);
  const auto& names = collector_.thread_names();
  EXPECT_EQ(collector_.stacks()[1].tid, 2);
  EXPECT_EQ(names[collector_.stacks()[2].thread_name], "renamed");
  EXPECT_EQ(collector_.stacks()[2].samples, 2u) << "entry 0 is no replay: looked up as usual";
  EXPECT_THAT(FramesOf(collector_.stacks()[3]),
              ElementsAre(CF(0x1200, AppModule()), CF(0x6fff, sampler::kNoModule)));
  EXPECT_EQ(collector_.stats().frames, 12u);
  EXPECT_EQ(collector_.stats().unmapped_frames, 6u);
}

// Attach mode: the snapshot of a thread blocked at the start (from /proc, without the scheduler's
// frames) takes the stack of the thread's switch samples in the same call, which have them.
// A tid the kernel hands out again is another thread: the wait for each one's first run keeps
// the name it was created with (its creator's then), not the later thread's.
TEST_F(StackCollectorTest, AReusedTidKeepsEachThreadsNameAtCreation) {
  collector_.track_off_cpu();
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("first").Exec(true).Build());
  Feed(ForkBuilder(format_).Pid(1).Ppid(1).Tid(7).Ptid(1).Time(100).Build());
  Feed(ExitBuilder(format_).Pid(1).Ppid(1).Tid(7).Ptid(1).Time(200).Build());
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("second").Build());
  Feed(ForkBuilder(format_).Pid(1).Ppid(1).Tid(7).Ptid(1).Time(300).Build());
  const auto& created = collector_.names_at_creation();
  ASSERT_TRUE(created.contains({7, 100}));
  ASSERT_TRUE(created.contains({7, 300}));
  EXPECT_EQ(collector_.thread_names()[created.at({7, 100})], "first");
  EXPECT_EQ(collector_.thread_names()[created.at({7, 300})], "second");
}

TEST_F(StackCollectorTest, BlockedAtStartTakesTheSwitchStackOfTheSameCall) {
  MapApp(1);
  collector_.track_off_cpu();
  collector_.mutable_off_cpu().set_recording_start(5);
  const uint64_t kSchedule = 0xffffffff81000100, kDoNanosleep = 0xffffffff81000200,
                 kHrtimerNanosleep = 0xffffffff81000300, kSyscall = 0xffffffff81000400;
  auto view = [](uint32_t tid, uint64_t time, const std::vector<uint64_t>& chain) {
    sampler::SampleView v;
    v.event = sampler::SampleEvent::kContextSwitch;
    v.pid = 1;
    v.tid = tid;
    v.time_ns = time;
    v.period = 1;
    v.callchain = chain;
    return v;
  };
  // /proc's stack: its first address is a return address, given as the call's byte.
  const std::vector<uint64_t> snapshot = {kKernel, kHrtimerNanosleep - 1, kSyscall, kUser,
                                          0x400100, 0x401000};
  const std::vector<uint64_t> full = {kKernel, kSchedule, kDoNanosleep, kHrtimerNanosleep,
                                      kSyscall, kUser, 0x400100, 0x401000};
  const std::vector<uint64_t> elsewhere = {kKernel, kSchedule, kDoNanosleep, kHrtimerNanosleep,
                                           kSyscall, kUser, 0x400108, 0x401000};
  const sampler::SampleView at_start = view(7, 10, snapshot);
  collector_.OnBlockedAtStart(std::span<const sampler::SampleView>(&at_start, 1));
  collector_.OnSwitch({.pid = 1, .tid = 7, .out = false, .time_ns = 100});
  collector_.OnSample(view(7, 200, full));
  collector_.OnSwitch({.pid = 1, .tid = 7, .out = true, .time_ns = 200});
  collector_.OnSwitch({.pid = 1, .tid = 7, .out = false, .time_ns = 300});
  collector_.OnSample(view(7, 400, elsewhere));
  collector_.OnSwitch({.pid = 1, .tid = 7, .out = true, .time_ns = 400});
  collector_.OnSwitch({.pid = 1, .tid = 7, .out = false, .time_ns = 450});
  collector_.mutable_off_cpu().Finish(500);
  collector_.CompleteBlockedAtStartStacks();

  const std::deque<OffCpuInterval>& intervals = collector_.off_cpu().intervals();
  ASSERT_EQ(intervals.size(), 3u);
  ASSERT_EQ(collector_.stacks().size(), 3u);
  const uint32_t snapshot_stack = 0, full_stack = 1, elsewhere_stack = 2;
  EXPECT_EQ(intervals[0].start_ns, 5u);
  EXPECT_EQ(intervals[0].stack, full_stack);
  EXPECT_EQ(intervals[1].stack, full_stack);
  EXPECT_EQ(intervals[2].stack, elsewhere_stack);
  EXPECT_EQ(collector_.stacks()[snapshot_stack].samples, 0u);
  EXPECT_EQ(collector_.stacks()[full_stack].samples, 2u);
}

class StackCollectorNoTimelineTest : public StackCollectorTest {
 protected:
  StackCollectorNoTimelineTest() : StackCollectorTest(false) {}
};

TEST_F(StackCollectorNoTimelineTest, NoTimelineUnlessAsked) {
  MapApp(1);
  Sample(1, 1, {kUser, 0x400100}, 1, 300);
  EXPECT_TRUE(collector_.timeline().empty());
  EXPECT_EQ(collector_.stacks().size(), 1u);
}

}  // namespace
}  // namespace nativeprof::unwind
