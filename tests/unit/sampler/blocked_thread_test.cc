#include "sampler/blocked_thread.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::sampler {
namespace {

TEST(BlockedThreadTest, ParsesTheSyscallFileOfABlockedThreadOnly) {
  const std::optional<SyscallState> s = ParseProcSyscall(
      "230 0x1 0x0 0x7ffc1000 0x7ffc1010 0x0 0x0 0x7ffc0fd8 0x7f3a1b2c3d4e\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->number, 230);
  EXPECT_EQ(s->sp, 0x7ffc0fd8u);
  EXPECT_EQ(s->pc, 0x7f3a1b2c3d4eu);
  EXPECT_FALSE(ParseProcSyscall("running\n").has_value());
  // Off a CPU outside a system call (a stopped thread in its own code): where it stopped.
  const std::optional<SyscallState> outside = ParseProcSyscall("-1 0x7ffc0fd8 0x7f3a1b2c3d4e\n");
  ASSERT_TRUE(outside.has_value());
  EXPECT_EQ(outside->number, -1);
  EXPECT_EQ(outside->sp, 0x7ffc0fd8u);
  EXPECT_EQ(outside->pc, 0x7f3a1b2c3d4eu);
  EXPECT_FALSE(ParseProcSyscall("-2 0x7ffc0fd8 0x7f3a1b2c3d4e\n").has_value());
  EXPECT_FALSE(ParseProcSyscall("230 0x1 0x0 0x0 0x0 0x0 0x0 zz 0x7f3a\n").has_value());
  EXPECT_FALSE(ParseProcSyscall("").has_value());
}

// A stack copy from sp = 0x1000: a few words of a leaf without a frame, then frame records at
// 0x1020 -> 0x1040 -> 0 whose return addresses are in the code mapping.
TEST(BlockedThreadTest, FramePointerGuessesPutChainsFirst) {
  using ::testing::ElementsAre;
  std::vector<ProcMapsEntry> maps(2);
  maps[0] = {.start_avma = 0x1000, .end_avma = 0x2000, .prot = PROT_READ | PROT_WRITE};
  maps[1] = {.start_avma = 0x400000, .end_avma = 0x500000, .prot = PROT_READ | PROT_EXEC};
  std::vector<uint64_t> words(16, 0);
  words[0] = 0x1500;    // a pointer into the stack, but followed by data: not a record
  words[1] = 0x77;
  words[2] = 0x400123;  // a return address: 0x1008 below it (0x77) is a loose guess
  words[4] = 0x1040;    // 0x1020: [saved rbp = 0x1040][ra]
  words[5] = 0x400456;
  words[8] = 0;         // 0x1040: the outermost record
  words[9] = 0x400789;
  std::vector<uint8_t> stack(words.size() * 8);
  auto guesses = [&](uint64_t sp = 0x1000) {
    std::memcpy(stack.data(), words.data(), stack.size());
    return FramePointerGuesses(stack, sp, maps);
  };
  // The chain, then the outermost record, then the word below a bare return address.
  EXPECT_THAT(guesses(), ElementsAre(0x1020u, 0x1040u, 0x1008u));
  // A zero right below a return address (a frame without frame pointers: a zeroed local or
  // saved register) looks like the outermost record: the chain still comes first.
  words[0] = 0;
  words[1] = 0x400111;
  EXPECT_THAT(guesses(), ElementsAre(0x1020u, 0x1000u, 0x1040u, 0x1008u));
  // The outermost frame-pointer function of a thread whose caller keeps no frame pointer saved
  // a meaningless rbp (1 here): only a loose guess finds its record.
  words = std::vector<uint64_t>(16, 0);
  words[6] = 1;
  words[7] = 0x400222;
  EXPECT_THAT(guesses(), ElementsAre(0x1030u));
  EXPECT_TRUE(FramePointerGuesses({}, 0x1000, maps).empty());
  // Values from the target's stack that would wrap a sum: a "saved rbp" of -16 next to a return
  // address, and a copy that ends at the top of the address space.
  words.assign(16, 0);
  words[2] = 0xfffffffffffffff0u;
  words[3] = 0x400123;
  EXPECT_EQ(guesses().front(), 0x1010u);  // it leads past the copy
  EXPECT_TRUE(guesses(~uint64_t{0} - 127).empty());
  // No more than a third of kMaxFramePointerGuesses of one kind.
  words.assign(64, 0);
  stack.resize(words.size() * 8);
  for (size_t i = 0; i < words.size(); i += 2) words[i + 1] = 0x400100 + i;
  EXPECT_EQ(guesses().size(), kMaxFramePointerGuesses / 3);
}

TEST(BlockedThreadTest, SampleCarriesTheRegistersInMaskOrder) {
  BlockedThread t;
  t.pid = 10;
  t.tid = 11;
  t.read_ns = 5;
  t.ip = 0x401000;
  t.sp = 0x7ff000;
  t.stack = {1, 2, 3, 4, 5, 6, 7, 8};
  t.stack_requested = 8192;
  std::vector<uint64_t> regs, callchain;
  const uint64_t mask = (1u << 6) | (1u << 7) | (1u << 8) | (1u << 0);  // ax, bp, sp, ip
  // The third frame could not be placed: the chain ends above it.
  const uint64_t kernel[] = {0xffffffff81000100, 0xffffffff81000200, 0, 0xffffffff81000300};
  const SampleView s = BlockedThreadSample(t, 0x7ff040, mask, kernel, &regs, &callchain);
  EXPECT_EQ(s.event, SampleEvent::kContextSwitch);
  EXPECT_EQ(s.tid, 11u);
  EXPECT_EQ(s.time_ns, 5u);
  EXPECT_EQ(s.regs_abi, uint64_t{PERF_SAMPLE_REGS_ABI_64});
  ASSERT_EQ(s.regs_user.size(), 4u);
  EXPECT_EQ(s.regs_user[0], 0u);
  EXPECT_EQ(s.regs_user[1], 0x7ff040u);
  EXPECT_EQ(s.regs_user[2], 0x7ff000u);
  EXPECT_EQ(s.regs_user[3], 0x401000u);
  EXPECT_EQ(s.stack_user.size(), 8u);
  EXPECT_EQ(s.stack_user_requested, 8192u);
  // The first return address becomes the call's own byte, taken as the interrupted instruction.
  EXPECT_THAT(std::vector<uint64_t>(s.callchain.begin(), s.callchain.end()),
              ::testing::ElementsAre(static_cast<uint64_t>(PERF_CONTEXT_KERNEL),
                                     0xffffffff810000ffu, 0xffffffff81000200u));
  // Without kernel frames, no chain at all.
  EXPECT_TRUE(BlockedThreadSample(t, 0x7ff040, mask, {}, &regs, &callchain).callchain.empty());
}

TEST(BlockedThreadTest, ParsesTheKernelStackFile) {
  const std::vector<KernelFrameName> frames = ParseProcStack(
      "[<0>] hrtimer_nanosleep+0xb5/0x130\n"
      "[<ffffffffc0001234>] ext4_read+0x1a/0x80 [ext4]\n"
      "garbage\n"
      "[<0>] no_offset\n"
      "[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n");
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].function, "hrtimer_nanosleep");
  EXPECT_EQ(frames[0].offset, 0xb5u);
  EXPECT_EQ(frames[0].avma, 0u);
  EXPECT_EQ(frames[1].function, "ext4_read");
  EXPECT_EQ(frames[1].offset, 0x1au);
  EXPECT_EQ(frames[1].avma, 0xffffffffc0001234u);
  EXPECT_EQ(frames[2].function, "entry_SYSCALL_64_after_hwframe");
  EXPECT_TRUE(ParseProcStack("").empty());
}

// A thread of this process blocked in read() of a pipe: seen as blocked, with its stack; a
// thread spinning is not.
TEST(BlockedThreadTest, SnapshotOfARealBlockedThread) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::atomic<pid_t> reader_tid{0};
  std::thread reader([&] {
    reader_tid = ::gettid();
    char byte;
    (void)!::read(fds[0], &byte, 1);
  });
  while (reader_tid == 0) std::this_thread::yield();
  absl::StatusOr<std::vector<ProcMapsEntry>> maps = ReadProcMaps(::getpid());
  ASSERT_TRUE(maps.ok()) << maps.status();
  std::optional<BlockedThread> seen;
  for (int i = 0; i < 200 && !seen.has_value(); ++i) {  // until it is inside read()
    absl::StatusOr<std::optional<BlockedThread>> t =
        SnapshotBlockedThread(::getpid(), reader_tid, 4096, *maps, /*kernel_frames=*/true);
    ASSERT_TRUE(t.ok()) << t.status();
    seen = *t;
    if (!seen.has_value()) ::usleep(5000);
  }
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->tid, static_cast<uint32_t>(reader_tid.load()));
  EXPECT_GT(seen->stack.size(), 64u);
  EXPECT_LE(seen->stack.size(), 4096u);
  EXPECT_NE(seen->ip, 0u);
  EXPECT_NE(seen->sp, 0u);
  // The kernel's frames of the read, where this process may read them (CAP_SYS_ADMIN).
  const std::string stack_file =
      "/proc/self/task/" + std::to_string(reader_tid.load()) + "/stack";
  if (::access(stack_file.c_str(), R_OK) == 0 && ::geteuid() == 0) {
    std::vector<std::string> names;
    for (const KernelFrameName& f : seen->kernel_frames) names.push_back(f.function);
    EXPECT_THAT(names, ::testing::Contains(::testing::HasSubstr("read"))) << names.size();
  }
  // This thread is running: no snapshot.
  absl::StatusOr<std::optional<BlockedThread>> self =
      SnapshotBlockedThread(::getpid(), ::gettid(), 4096, *maps, /*kernel_frames=*/true);
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_FALSE(self->has_value());
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  reader.join();
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace nativeprof::sampler
