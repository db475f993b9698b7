#include "base/group_signal_witness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

TEST(GroupSignalWitnessTest, ReportsWhatTheGroupIsSentAndNotWhatTheProcessAloneIs) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(RunInOwnGroup());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), kOk);
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
