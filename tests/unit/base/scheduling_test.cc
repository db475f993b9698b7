#include "base/scheduling.h"

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(SchedStatTest, ParsesTheThreeFields) {
  NP_ASSERT_OK_AND_ASSIGN(SchedStat s, ParseSchedStat("1039566747 522641098 247\n"));
  EXPECT_EQ(s.on_cpu_ns, 1039566747u);
  EXPECT_EQ(s.run_queue_ns, 522641098u);
  EXPECT_EQ(s.timeslices, 247u);
}

TEST(SchedStatTest, MalformedIsDataLoss) {
  EXPECT_TRUE(absl::IsDataLoss(ParseSchedStat("12 34\n").status()));
  EXPECT_TRUE(absl::IsDataLoss(ParseSchedStat("a b c\n").status()));
  EXPECT_TRUE(absl::IsDataLoss(ParseSchedStat("").status()));
}

TEST(SchedStatTest, ReadsTheCallingThread) {
  absl::StatusOr<SchedStat> s = ReadThreadSchedStat();
  if (absl::IsNotFound(s.status())) GTEST_SKIP() << "kernel without CONFIG_SCHED_INFO";
  // The kernel adds a thread's run time at a tick or a switch, and a test process this young
  // may have had neither: run a little and yield until it has (at most 1 s).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (s.ok() && s->on_cpu_ns == 0 && std::chrono::steady_clock::now() < until) {
    for (const auto spin = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
         std::chrono::steady_clock::now() < spin;) {
    }
    sched_yield();
    s = ReadThreadSchedStat();
  }
  NP_ASSERT_OK(s.status());
  EXPECT_GT(s->on_cpu_ns, 0u);
  EXPECT_GT(s->timeslices, 0u);
}

TEST(ProcessAgeTest, ParsesStarttimeAfterTheCommandName) {
  // The comm "a) b" holds the separators a naive split would trip on.
  const std::string stat =
      "4242 (a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 12345 1000 10 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  NP_ASSERT_OK_AND_ASSIGN(double age, ParseProcessAgeSeconds(stat, 125.0, 100));
  EXPECT_DOUBLE_EQ(age, 125.0 - 123.45);
  EXPECT_TRUE(absl::IsDataLoss(ParseProcessAgeSeconds("4242 (x) S 1", 1.0, 100).status()));
}

TEST(ProcessAgeTest, ThisProcessIsYoungerThanTheMachine) {
  NP_ASSERT_OK_AND_ASSIGN(double age, ProcessAgeSeconds());
  EXPECT_GE(age, 0.0);
  EXPECT_LT(age, 3600.0);
}

// A scheduler that refuses what `allow_*` says and records every change it was asked for.
struct FakeScheduler {
  int policy = SCHED_OTHER;
  int nice = 0;
  bool allow_fifo = true;
  int lowest_nice = -20;  // set_nice below this fails with EPERM
  int floor = -20;        // what nice_floor() reports
  std::vector<std::pair<int, int>> policy_calls;  // (policy with flags, priority)
  std::vector<int> nice_calls;

  SchedulerCalls Calls() {
    SchedulerCalls c;
    c.get_policy = [this] { return policy; };
    c.get_nice = [this] { return nice; };
    c.set_policy = [this](int p, int prio) {
      policy_calls.emplace_back(p, prio);
      if ((p & ~SCHED_RESET_ON_FORK) == SCHED_FIFO && !allow_fifo) {
        errno = EPERM;
        return -1;
      }
      policy = p & ~SCHED_RESET_ON_FORK;
      return 0;
    };
    c.set_nice = [this](int n) {
      nice_calls.push_back(n);
      if (n < lowest_nice) {
        errno = EACCES;
        return -1;
      }
      nice = n;
      return 0;
    };
    c.nice_floor = [this] { return floor; };
    return c;
  }
};

TEST(RaiseThreadPriorityTest, RealtimeWhenPermittedAndResetOnFork) {
  FakeScheduler s;
  s.nice = 5;
  PriorityBoost b = RaiseThreadPriority(s.Calls());
  EXPECT_EQ(b.kind, PriorityKind::kRealtime);
  EXPECT_EQ(b.Describe(), "SCHED_FIFO 1");
  EXPECT_EQ(b.original_nice, 5) << "what a child forked later restores";
  EXPECT_THAT(s.policy_calls, ElementsAre(Pair(SCHED_FIFO | SCHED_RESET_ON_FORK, 1)));
  EXPECT_TRUE(s.nice_calls.empty());
}

TEST(RaiseThreadPriorityTest, NiceWhenRealtimeIsRefused) {
  FakeScheduler s;
  s.allow_fifo = false;
  PriorityBoost b = RaiseThreadPriority(s.Calls());
  EXPECT_EQ(b.kind, PriorityKind::kNice);
  EXPECT_EQ(b.Describe(), "nice -20");
  EXPECT_EQ(s.nice, -20);
  // The reset-on-fork flag comes after the nice that it resets in children.
  EXPECT_THAT(s.policy_calls, ElementsAre(Pair(SCHED_FIFO | SCHED_RESET_ON_FORK, 1),
                                          Pair(SCHED_OTHER | SCHED_RESET_ON_FORK, 0)));
}

// record --off-cpu: nice only, even where FIFO is allowed, so the drain thread is placed on an
// idle CPU instead of preempting the target on its own.
TEST(RaiseThreadPriorityTest, NiceOnlyNeverAsksForRealtime) {
  FakeScheduler s;
  PriorityBoost b = RaiseThreadPriority(s.Calls(), /*nice_only=*/true);
  EXPECT_EQ(b.kind, PriorityKind::kNice);
  EXPECT_EQ(b.Describe(), "nice -20");
  EXPECT_THAT(s.policy_calls, ElementsAre(Pair(SCHED_OTHER | SCHED_RESET_ON_FORK, 0)));
}

TEST(RaiseThreadPriorityTest, NiceFromRlimitNice) {
  FakeScheduler s;
  s.allow_fifo = false;
  s.lowest_nice = -5;
  s.floor = -5;
  PriorityBoost b = RaiseThreadPriority(s.Calls());
  EXPECT_EQ(b.kind, PriorityKind::kNice);
  EXPECT_EQ(b.value, -5);
  EXPECT_THAT(s.nice_calls, ElementsAre(-20, -5));
}

TEST(RaiseThreadPriorityTest, UnchangedWhenNothingIsPermitted) {
  FakeScheduler s;
  s.allow_fifo = false;
  s.lowest_nice = 0;
  s.floor = 0;
  PriorityBoost b = RaiseThreadPriority(s.Calls());
  EXPECT_EQ(b.kind, PriorityKind::kUnchanged);
  EXPECT_EQ(b.Describe(), "normal");
  EXPECT_THAT(b.why, HasSubstr("CAP_SYS_NICE"));
  EXPECT_EQ(s.nice, 0);
  EXPECT_THAT(s.nice_calls, ElementsAre(-20));  // the floor is no better than now: not tried
}

TEST(RaiseThreadPriorityTest, LeavesAUserChoiceAlone) {
  FakeScheduler rt;
  rt.policy = SCHED_RR;
  EXPECT_EQ(RaiseThreadPriority(rt.Calls()).kind, PriorityKind::kUnchanged);
  EXPECT_TRUE(rt.policy_calls.empty());

  FakeScheduler idle;
  idle.policy = SCHED_IDLE;
  EXPECT_EQ(RaiseThreadPriority(idle.Calls()).kind, PriorityKind::kUnchanged);
  EXPECT_TRUE(idle.policy_calls.empty());
  EXPECT_TRUE(idle.nice_calls.empty());

  FakeScheduler niced;
  niced.allow_fifo = false;
  niced.nice = -20;
  EXPECT_EQ(RaiseThreadPriority(niced.Calls()).kind, PriorityKind::kUnchanged);
  EXPECT_TRUE(niced.nice_calls.empty());
}

}  // namespace
}  // namespace nativeprof
