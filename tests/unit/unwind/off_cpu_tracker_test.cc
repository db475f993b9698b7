#include "unwind/off_cpu_tracker.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace nativeprof::unwind {
namespace {

TEST(OffCpuTrackerTest, PairsEachSwitchOutWithTheNextSwitchIn) {
  OffCpuTracker t;
  t.OnSwitchSample(1, 2, 1000, /*stack=*/5);
  t.OnSwitch(1, 2, 1001, /*out=*/true, /*preempted=*/false);
  t.OnSwitch(1, 2, 5001, /*out=*/false, false);
  t.OnSwitchSample(1, 2, 6000, 7);
  t.OnSwitch(1, 2, 6002, true, /*preempted=*/true);
  t.OnSwitch(1, 2, 6502, false, false);
  t.Finish(10000);
  ASSERT_EQ(t.intervals().size(), 2u);
  EXPECT_EQ(t.intervals()[0].stack, 5u);
  EXPECT_EQ(t.intervals()[0].start_ns, 1001u);
  EXPECT_EQ(t.intervals()[0].duration_ns, 4000u);
  EXPECT_FALSE(t.intervals()[0].waiting);
  EXPECT_EQ(t.intervals()[1].stack, 7u);
  EXPECT_EQ(t.intervals()[1].duration_ns, 500u);
  EXPECT_TRUE(t.intervals()[1].waiting);
  const std::vector<ThreadTimes> threads = t.Threads();
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].blocked_ns, 4000u);
  EXPECT_EQ(threads[0].waiting_ns, 500u);
  EXPECT_EQ(threads[0].switches, 2u);
  EXPECT_EQ(threads[0].last_ns, 10000u);
}

TEST(OffCpuTrackerTest, BlockedAtTheEndIsCountedUpToTheStop) {
  OffCpuTracker t;
  t.OnSwitchSample(1, 2, 100, 3);
  t.OnSwitch(1, 2, 100, true, false);
  t.Finish(900);
  ASSERT_EQ(t.intervals().size(), 1u);
  EXPECT_EQ(t.intervals()[0].duration_ns, 800u);
}

TEST(OffCpuTrackerTest, ExitEndsTheThreadAndNothingAfterCounts) {
  OffCpuTracker t;
  t.OnThreadCreated(1, 4, 50);
  t.OnSwitch(1, 4, 80, false, false);  // first run: waited 30 ns for a CPU
  t.OnThreadExited(4, 200);
  t.OnSwitch(1, 4, 210, true, false);
  t.Finish(1000);
  ASSERT_EQ(t.intervals().size(), 1u);
  EXPECT_TRUE(t.intervals()[0].waiting);
  EXPECT_EQ(t.intervals()[0].stack, kNoSampledStack);
  EXPECT_EQ(t.intervals()[0].duration_ns, 30u);
  const std::vector<ThreadTimes> threads = t.Threads();
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_TRUE(threads[0].exited);
  EXPECT_EQ(threads[0].last_ns - threads[0].first_ns, 150u);
}

// A thread other than the main one execs: the kernel ends the main thread (its exit record),
// and the thread that made the call goes on as the main thread's tid, with no exit record of its
// own. Before, the main tid's later sleep was dropped (it had exited) and counted as on-CPU, and
// the old tid lived on to the end.
TEST(OffCpuTrackerTest, AnExecFromAnotherThreadCarriesOnAsTheMainThread) {
  OffCpuTracker t;
  t.set_recording_start(0);
  t.NoteExistingThread(10, 10);
  t.NoteExistingThread(10, 11);
  t.OnSwitch(10, 10, 5, true, false);   // main sleeps
  t.OnSwitch(10, 11, 20, true, false);  // the other thread sleeps 280 ns
  t.OnSwitch(10, 11, 300, false, false);
  t.OnThreadExited(10, 310);            // the exec ends the main thread
  t.OnExec(10, 320);                    // ... and thread 11 goes on as 10
  t.OnSwitch(10, 10, 400, true, false);  // the new image sleeps 500 ns
  t.OnSwitch(10, 10, 900, false, false);
  t.Finish(1000);
  const std::vector<ThreadTimes> threads = t.Threads();  // by pid and tid
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_FALSE(threads[0].exited);
  EXPECT_EQ(threads[0].blocked_ns, 305u + 500u);  // the old main thread's, then the new image's
  // From 310 to 320 there was no main thread: thread 11's lifetime holds that time.
  EXPECT_EQ(threads[0].lifetime_ns(), 990u);
  EXPECT_TRUE(threads[1].exited);
  EXPECT_EQ(threads[1].last_ns, 320u);
  EXPECT_EQ(threads[1].blocked_ns, 280u);

  // An exec of a pid whose main thread exited and which has no other thread is a new process
  // of a reused pid (its fork record lost): it starts afresh, not from the old one's start.
  OffCpuTracker reused;
  reused.set_recording_start(0);
  reused.NoteExistingThread(20, 20);
  reused.OnThreadExited(20, 100);
  reused.OnExec(20, 500);
  reused.Finish(1000);
  ASSERT_EQ(reused.Threads().size(), 1u);
  EXPECT_EQ(reused.Threads()[0].first_ns, 500u);
  EXPECT_EQ(reused.Threads()[0].on_cpu_ns(), 500u);
}

TEST(OffCpuTrackerTest, AThreadThatNeverRanIsOffCpuThroughout) {
  OffCpuTracker t;
  t.set_recording_start(100);
  t.NoteExistingThread(1, 1);
  t.NoteExistingThread(1, 2);
  t.OnSwitch(1, 2, 400, false, false);  // was blocked since before the start
  t.Finish(1100);
  const std::vector<ThreadTimes> threads = t.Threads();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_FALSE(threads[0].ran);
  EXPECT_EQ(threads[0].blocked_ns, 1000u);
  EXPECT_TRUE(threads[1].ran);
  EXPECT_EQ(threads[1].blocked_ns, 300u);
}

// A thread created while recording waits for its first run with no stack of its own: that
// interval, and only that one, is marked as its first and as a created thread's.
TEST(OffCpuTrackerTest, ANewThreadsFirstWaitIsMarked) {
  OffCpuTracker t;
  t.set_recording_start(100);
  t.NoteExistingThread(1, 1, /*runnable=*/true);
  t.OnThreadCreated(1, 2, 200);
  t.OnSwitch(1, 1, 150, false, false);
  t.OnSwitch(1, 2, 260, false, false);
  t.OnSwitch(1, 2, 300, true, /*preempted=*/true);
  t.OnSwitch(1, 2, 350, false, false);
  t.Finish(1000);
  ASSERT_EQ(t.intervals().size(), 3u);
  const OffCpuInterval& at_start = t.intervals()[0];
  EXPECT_EQ(at_start.tid, 1);
  EXPECT_TRUE(at_start.first);
  EXPECT_FALSE(at_start.created);
  const OffCpuInterval& new_wait = t.intervals()[1];
  EXPECT_EQ(new_wait.tid, 2);
  EXPECT_EQ(new_wait.duration_ns, 60u);
  EXPECT_TRUE(new_wait.waiting);
  EXPECT_TRUE(new_wait.first);
  EXPECT_TRUE(new_wait.created);
  const OffCpuInterval& preempted = t.intervals()[2];
  EXPECT_TRUE(preempted.waiting);
  EXPECT_FALSE(preempted.first);
}

// Attach mode: a thread runnable but on no CPU as recording starts (preempted: /proc's 'R') was
// waiting for a CPU until its first switch-in, not blocked (4 spinners on 2 CPUs under -p had
// 27-36 ms of blocked time under [off-CPU, stack not sampled]).
TEST(OffCpuTrackerTest, AThreadRunnableAtTheStartWaitsUntilItRuns) {
  OffCpuTracker t;
  t.set_recording_start(100);
  t.NoteExistingThread(1, 1, /*runnable=*/true);
  t.NoteExistingThread(1, 2, /*runnable=*/false);
  t.OnSwitch(1, 1, 130, false, false);
  t.OnSwitch(1, 2, 400, false, false);
  t.Finish(1100);
  const std::vector<ThreadTimes> threads = t.Threads();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].waiting_ns, 30u);
  EXPECT_EQ(threads[0].blocked_ns, 0u);
  EXPECT_EQ(threads[1].waiting_ns, 0u);
  EXPECT_EQ(threads[1].blocked_ns, 300u);
  // Read as runnable, then found blocked in a system call (its stack snapshot): blocked.
  OffCpuTracker u;
  u.set_recording_start(100);
  u.NoteExistingThread(1, 3, /*runnable=*/true);
  u.NoteBlockedAtStart(1, 3, 120, 7);
  u.Finish(1100);
  ASSERT_EQ(u.Threads().size(), 1u);
  EXPECT_EQ(u.Threads()[0].blocked_ns, 1000u);
  EXPECT_EQ(u.Threads()[0].waiting_ns, 0u);
}

// Attach mode: the stacks read from /proc for threads already blocked describe the interval
// each is in, unless the thread had already run again by the time its stack was read.
TEST(OffCpuTrackerTest, ASnapshotAtTheStartIsTheStackOfTheFirstInterval) {
  OffCpuTracker t;
  t.set_recording_start(100);
  for (int32_t tid : {1, 2, 3}) t.NoteExistingThread(1, tid);
  t.NoteBlockedAtStart(1, 1, 120, 7);  // never runs
  t.NoteBlockedAtStart(1, 2, 120, 8);  // wakes at 400
  t.NoteBlockedAtStart(1, 3, 120, 9);  // woke at 110, before its stack was read
  t.OnSwitch(1, 2, 400, false, false);
  t.OnSwitch(1, 3, 110, false, false);
  t.Finish(1100);
  ASSERT_EQ(t.intervals().size(), 3u);
  for (const OffCpuInterval& iv : t.intervals()) {
    SCOPED_TRACE(iv.tid);
    EXPECT_EQ(iv.start_ns, 100u);
    EXPECT_FALSE(iv.waiting);
    if (iv.tid == 1) {
      EXPECT_EQ(iv.stack, 7u);
      EXPECT_EQ(iv.duration_ns, 1000u);
    } else if (iv.tid == 2) {
      EXPECT_EQ(iv.stack, 8u);
      EXPECT_EQ(iv.duration_ns, 300u);
    } else {
      EXPECT_EQ(iv.stack, kNoSampledStack);
      EXPECT_EQ(iv.duration_ns, 10u);
    }
  }
}

// Attach mode reads the snapshots before sampling starts, then sets the start again: the threads
// noted in between start then, and a snapshot dropped because its thread ran in between (kNo
// SampledStack) gives its interval no stack.
TEST(OffCpuTrackerTest, AStartSetAgainMovesTheThreadsNotedBefore) {
  OffCpuTracker t;
  t.set_recording_start(100);
  for (int32_t tid : {1, 2}) t.NoteExistingThread(1, tid);
  t.NoteBlockedAtStart(1, 1, 120, 7);
  t.NoteBlockedAtStart(1, 2, 120, 8);
  t.NoteBlockedAtStart(1, 2, 0, kNoSampledStack);  // ran before the start: dropped
  t.set_recording_start(200);
  t.OnSwitch(1, 2, 400, false, false);
  t.Finish(1200);
  ASSERT_EQ(t.intervals().size(), 2u);
  for (const OffCpuInterval& iv : t.intervals()) {
    SCOPED_TRACE(iv.tid);
    EXPECT_EQ(iv.start_ns, 200u);
    EXPECT_EQ(iv.stack, iv.tid == 1 ? 7u : kNoSampledStack);
    EXPECT_EQ(iv.duration_ns, iv.tid == 1 ? 1000u : 200u);
  }
  for (const ThreadTimes& th : t.Threads()) EXPECT_EQ(th.lifetime_ns(), 1000u) << th.tid;
}

TEST(OffCpuTrackerTest, ALostSwitchSampleLeavesTheIntervalWithoutAStack) {
  OffCpuTracker t;
  t.OnSwitch(1, 2, 100, true, false);
  t.OnSwitch(1, 2, 300, false, false);
  // A sample long before its record belongs to another switch.
  t.OnSwitchSample(1, 2, 400, 9);
  t.OnSwitch(1, 2, 400 + 5'000'000, true, false);
  t.OnSwitch(1, 2, 400 + 6'000'000, false, false);
  t.Finish(1);
  ASSERT_EQ(t.intervals().size(), 2u);
  EXPECT_EQ(t.intervals()[0].stack, kNoSampledStack);
  EXPECT_EQ(t.intervals()[1].stack, kNoSampledStack);
}

}  // namespace
}  // namespace nativeprof::unwind
