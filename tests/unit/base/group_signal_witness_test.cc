#include "base/group_signal_witness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace nativeprof {
namespace {

// What the child below found, as its exit code.
enum Outcome { kOk = 0, kNoWitness = 10, kGroupSignalNotReported, kDirectSignalReported };

// In a process group of its own (a signal to the test's group would reach ctest): a kill of the
// group is reported with its sender, a kill of the process alone is not.
Outcome RunInOwnGroup() {
  if (::setpgid(0, 0) != 0) return kNoWitness;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, nullptr);  // as SignalReader does before the witness starts
  absl::StatusOr<GroupSignalWitness> witness = GroupSignalWitness::Start(set);
  if (!witness.ok()) return kNoWitness;
  if (::getpgid(witness->pid()) != ::getpgrp()) return kNoWitness;
  ::kill(0, SIGUSR1);  // the group: this process (blocked, pending) and the witness
  bool reported = false;
  for (int i = 0; i < 200 && !reported; ++i) {
    reported = witness->GroupWasSent(SIGUSR1, ::getpid());
    if (!reported) ::usleep(5000);
  }
  if (!reported) return kGroupSignalNotReported;
  ::kill(::getpid(), SIGUSR1);  // this process alone
  ::usleep(100'000);
  if (witness->GroupWasSent(SIGUSR1, ::getpid())) return kDirectSignalReported;
  return kOk;
}

// Runs `scenario` in a forked child (it makes a process group of its own) and returns its
// outcome, the child's exit code; -1 when the child did not exit.
int OutcomeInChild(int (*scenario)()) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) ::_exit(scenario());
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(GroupSignalWitnessTest, ReportsWhatTheGroupIsSentAndNotWhatTheProcessAloneIs) {
  EXPECT_EQ(OutcomeInChild([] { return static_cast<int>(RunInOwnGroup()); }), kOk);
}

enum LateOutcome {
  kLateOk = 0,
  kLateNoWitness = 10,
  kStoppedWitnessReported,
  kLateGroupSignalNotAnswered,
  kDirectSignalAnsweredAsGroup,
  kAnswerTookTheWholeWait,
};

// A witness that has not run since the group signal (stopped here; on a loaded machine, not yet
// scheduled) has not reported it, but asked, answers with it once it runs; asked about a signal
// sent to this process alone, it answers at once that the group was not sent it.
LateOutcome RunWithLateWitness() {
  if (::setpgid(0, 0) != 0) return kLateNoWitness;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  absl::StatusOr<GroupSignalWitness> witness = GroupSignalWitness::Start(set);
  if (!witness.ok()) return kLateNoWitness;
  const pid_t witness_pid = witness->pid();
  ::kill(witness_pid, SIGSTOP);
  ::kill(0, SIGUSR1);  // pending in the stopped witness
  ::usleep(50'000);
  if (witness->GroupWasSent(SIGUSR1, ::getpid())) return kStoppedWitnessReported;
  std::thread resume([witness_pid] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(witness_pid, SIGCONT);
  });
  const bool answered = witness->GroupWasSent(SIGUSR1, ::getpid(), std::chrono::seconds(20));
  resume.join();
  if (!answered) return kLateGroupSignalNotAnswered;

  ::kill(::getpid(), SIGUSR1);  // this process alone
  const auto start = std::chrono::steady_clock::now();
  if (witness->GroupWasSent(SIGUSR1, ::getpid(), std::chrono::seconds(20))) {
    return kDirectSignalAnsweredAsGroup;
  }
  if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) {
    return kAnswerTookTheWholeWait;
  }
  return kLateOk;
}

TEST(GroupSignalWitnessTest, ALateWitnessAnswersWhenAsked) {
  EXPECT_EQ(OutcomeInChild([] { return static_cast<int>(RunWithLateWitness()); }), kLateOk);
}

TEST(GroupSignalWitnessTest, TheWitnessIsReapedWithTheObject) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  sigset_t old;
  sigprocmask(SIG_BLOCK, &set, &old);
  pid_t witness_pid = -1;
  {
    absl::StatusOr<GroupSignalWitness> witness = GroupSignalWitness::Start(set);
    ASSERT_TRUE(witness.ok()) << witness.status();
    witness_pid = witness->pid();
    EXPECT_EQ(::kill(witness_pid, 0), 0);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  EXPECT_NE(::kill(witness_pid, 0), 0) << "the witness outlived its object";
}

}  // namespace
}  // namespace nativeprof
