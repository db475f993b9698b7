// The record loop and its targets without perf events: a fake target over a pipe, real child
// processes for the launched and attached targets, and no session (the counting-only shape of
// `stat` and the library).
#include "sampler/record_loop.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/scoped_fd.h"
#include "base/signal_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/child_process.h"
#include "sampler/target.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

using ::testing::ElementsAre;
using Clock = std::chrono::steady_clock;

// Done once its pipe has something to read; records what the loop asked of it.
class PipeTarget final : public Target {
 public:
  PipeTarget() {
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    read_.Reset(p[0]);
    write_.Reset(p[1]);
    pollfd_ = {read_.get(), POLLIN, 0};
  }
  void MakeDone() { EXPECT_EQ(::write(write_.get(), "x", 1), 1); }

  absl::Status Start() override {
    ++starts;
    return start_status;
  }
  std::span<pollfd> fds() override { return std::span<pollfd>(&pollfd_, 1); }
  bool Done() override {
    ++done_calls;
    return (pollfd_.revents & POLLIN) != 0 || (done_after_signal && !signals.empty());
  }
  SignalVerdict OnSignal(const ReceivedSignal& sig) override {
    signals.push_back(sig.number);
    return verdict;
  }
  int max_wait_ms() const override { return -1; }
  int exit_code() const override { return 7; }

  absl::Status start_status;
  SignalVerdict verdict = SignalVerdict::kContinue;
  bool done_after_signal = false;
  int starts = 0;
  int done_calls = 0;
  std::vector<int> signals;

 private:
  ScopedFd read_, write_;
  pollfd pollfd_{};
};

// A bound on every loop below, so a broken loop fails instead of hanging the suite.
Clock::time_point Soon() { return Clock::now() + std::chrono::seconds(20); }

TEST(RecordLoopTest, EndsWhenTheTargetsFdSaysItIsDone) {
  PipeTarget target;
  target.MakeDone();
  RecordLoopOptions options;
  options.deadline = Soon();
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kTargetDone);
  EXPECT_EQ(target.starts, 1);
  EXPECT_EQ(target.done_calls, 1);
  EXPECT_EQ(r.signals_received, 0);
}

TEST(RecordLoopTest, StartFailureIsReturnedBeforeAnyWait) {
  PipeTarget target;
  target.start_status = absl::NotFoundError("cannot execute 'x'");
  absl::StatusOr<RecordLoopResult> r = RunRecordLoop(target, {});
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_EQ(target.done_calls, 0);
}

TEST(RecordLoopTest, DeadlineEndsALoopWhoseTargetRunsOn) {
  PipeTarget target;
  RecordLoopOptions options;
  const auto start = Clock::now();
  options.deadline = start + std::chrono::milliseconds(150);
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kDeadline);
  EXPECT_GE(r.stopped_at, options.deadline);
  EXPECT_LT(r.stopped_at - start, std::chrono::seconds(10));
}

TEST(RecordLoopTest, SignalsGoToTheTargetWhichMayGoOn) {
  NP_ASSERT_OK_AND_ASSIGN(SignalReader signals, SignalReader::Create({.signals = {SIGUSR1}}));
  PipeTarget target;
  target.done_after_signal = true;
  ASSERT_EQ(raise(SIGUSR1), 0);
  RecordLoopOptions options;
  options.signals = &signals;
  options.deadline = Soon();
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kTargetDone) << "kContinue: the target decided when it was done";
  EXPECT_EQ(r.signals_received, 1);
  EXPECT_THAT(target.signals, ElementsAre(SIGUSR1));
}

TEST(RecordLoopTest, ASignalCanStopTheLoop) {
  NP_ASSERT_OK_AND_ASSIGN(SignalReader signals, SignalReader::Create({.signals = {SIGUSR1}}));
  PipeTarget target;
  target.verdict = SignalVerdict::kStop;
  ASSERT_EQ(raise(SIGUSR1), 0);
  RecordLoopOptions options;
  options.signals = &signals;
  options.deadline = Soon();
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kSignal);
  EXPECT_EQ(target.done_calls, 0) << "a stop signal ends the round before Done()";
  EXPECT_FALSE(signals.Pending());
}

TEST(RecordLoopTest, WaitMsRoundsUpAndHonoursTheLimit) {
  const auto never = Clock::time_point::max();
  EXPECT_EQ(WaitMs(never, 100), 100);
  EXPECT_EQ(WaitMs(never, -1), -1);
  EXPECT_EQ(WaitMs(Clock::now() - std::chrono::milliseconds(1), 100), 0);
  EXPECT_EQ(WaitMs(Clock::now() + std::chrono::seconds(5), 100), 100);
  const int ms = WaitMs(Clock::now() + std::chrono::microseconds(2500), -1);
  EXPECT_GE(ms, 1);
  EXPECT_LE(ms, 3) << "rounded up, never past the deadline by a whole millisecond";
}

TEST(LaunchedTargetTest, RunsTheCommandToItsExitStatus) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"/bin/sh", "-c", "exit 3"}));
  LaunchedTarget target(&child, {});
  RecordLoopOptions options;
  options.deadline = Soon();
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kTargetDone);
  ASSERT_TRUE(target.wait_status().has_value());
  EXPECT_EQ(target.exit_code(), 3);
  EXPECT_FALSE(target.forwarded_signal());
}

TEST(LaunchedTargetTest, ExecFailureComesBackFromTheLoop) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"nativeprof-no-such-program"}));
  LaunchedTarget target(&child, {});
  EXPECT_TRUE(absl::IsNotFound(RunRecordLoop(target, {}).status()));
}

TEST(LaunchedTargetTest, ASignalIsForwardedAndTheLoopWaitsForTheExit) {
  NP_ASSERT_OK_AND_ASSIGN(SignalReader signals, SignalReader::Create({.signals = {SIGUSR1}}));
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"/bin/sleep", "30"}));
  LaunchedTarget target(&child, {});
  ASSERT_EQ(raise(SIGUSR1), 0);
  RecordLoopOptions options;
  options.signals = &signals;
  options.deadline = Soon();
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kTargetDone);
  EXPECT_EQ(r.signals_received, 1);
  EXPECT_TRUE(target.forwarded_signal());
  EXPECT_EQ(target.exit_code(), 128 + SIGUSR1) << "sleep died of the forwarded signal";
}

// SIGTERM too: `timeout -k`, systemd and CI runners send it before SIGKILL.
TEST(LaunchedTargetTest, ASecondSignalStopsWaitingWhenAsked) {
  for (const auto& [sig, name] : {std::pair{SIGINT, "INT"}, std::pair{SIGTERM, "TERM"}}) {
    // A command that ignores the signal (SIG_IGN survives exec).
    NP_ASSERT_OK_AND_ASSIGN(
        ChildProcess child,
        ChildProcess::Spawn({"/bin/sh", "-c", absl::StrCat("trap '' ", name, "; exec sleep 30")}));
    LaunchedTarget target(&child, {.second_sigint_stops_waiting = true});
    NP_ASSERT_OK(target.Start());
    EXPECT_EQ(target.OnSignal({.number = sig, .sender = 100}), SignalVerdict::kContinue) << name;
    EXPECT_TRUE(target.forwarded_signal()) << name;
    EXPECT_FALSE(target.stopped_waiting()) << name;
    // From another process: a second signal, not the first one's group copy.
    EXPECT_EQ(target.OnSignal({.number = sig, .sender = 101}), SignalVerdict::kContinue) << name;
    EXPECT_TRUE(target.stopped_waiting()) << name;
    EXPECT_TRUE(target.Done()) << name;
    EXPECT_FALSE(target.wait_status().has_value()) << name;
    EXPECT_EQ(target.exit_code(), 128 + SIGINT) << name;
  }  // ~ChildProcess kills the command
}

// The terminal sent its Ctrl-C to the command too (same process group): forwarding it would
// make one Ctrl-C two. A kill() of nativeprof alone is forwarded.
TEST(LaunchedTargetTest, ATerminalsSignalIsNotSentTwice) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"/bin/sleep", "30"}));
  ASSERT_EQ(::getpgid(child.pid()), ::getpgrp());
  LaunchedTarget target(&child, {});
  NP_ASSERT_OK(target.Start());
  EXPECT_EQ(target.OnSignal({.number = SIGINT, .from_terminal = true}), SignalVerdict::kContinue);
  ::usleep(100'000);
  EXPECT_FALSE(child.TryWait().has_value()) << "the terminal's signal was sent again";
  EXPECT_EQ(target.OnSignal({.number = SIGINT}), SignalVerdict::kContinue);
  for (int i = 0; i < 100 && !target.Done(); ++i) ::usleep(20'000);
  ASSERT_TRUE(target.wait_status().has_value());
  EXPECT_EQ(target.exit_code(), 128 + SIGINT);
}

// `timeout` signals nativeprof, then its whole process group: the command (in that group) got
// the second copy itself. The copy is neither forwarded nor a second signal, which made
// nativeprof stop waiting and SIGKILL a command shutting down gracefully.
TEST(LaunchedTargetTest, TheSendersGroupCopyIsNeitherForwardedNorASecondSignal) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"/bin/sleep", "30"}));
  ASSERT_EQ(::getpgid(child.pid()), ::getpgrp());
  LaunchedTarget target(&child, {.second_sigint_stops_waiting = true});
  NP_ASSERT_OK(target.Start());
  EXPECT_EQ(target.OnSignal({.number = SIGINT, .sender = 100}), SignalVerdict::kContinue);
  EXPECT_EQ(target.OnSignal({.number = SIGINT, .sender = 100}), SignalVerdict::kContinue);
  EXPECT_FALSE(target.stopped_waiting()) << "the group copy counted as a second signal";
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(target.Done());
    ::usleep(2 * LaunchedTarget::kGroupCopyWaitMs * 1000);
  }
  // sleep dies of one SIGINT: it was sent none (the copy stood for the one it got directly).
  EXPECT_FALSE(child.TryWait().has_value()) << "the first signal was forwarded as well";
  // Later, from the same sender: a second signal.
  ::usleep(LaunchedTarget::kGroupCopyWindowMs * 1000);
  EXPECT_EQ(target.OnSignal({.number = SIGINT, .sender = 100}), SignalVerdict::kContinue);
  EXPECT_TRUE(target.stopped_waiting());
}

// A kill of nativeprof alone reaches the command kGroupCopyWaitMs later, through Done(), which
// the loop asks that soon (max_wait_ms).
TEST(LaunchedTargetTest, AProcessSentSignalIsForwardedOnceItsCopyHadTimeToCome) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"/bin/sleep", "30"}));
  LaunchedTarget target(&child, {.second_sigint_stops_waiting = true});
  NP_ASSERT_OK(target.Start());
  EXPECT_EQ(target.OnSignal({.number = SIGINT, .sender = 100}), SignalVerdict::kContinue);
  EXPECT_GE(target.max_wait_ms(), 0);
  EXPECT_LE(target.max_wait_ms(), LaunchedTarget::kGroupCopyWaitMs);
  for (int i = 0; i < 200 && !target.Done(); ++i) ::usleep(10'000);
  ASSERT_TRUE(target.wait_status().has_value());
  EXPECT_EQ(target.exit_code(), 128 + SIGINT);
}

TEST(LaunchedTargetTest, WithoutTheOptionEverySignalIsForwarded) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child,
                          ChildProcess::Spawn({"/bin/sh", "-c", "trap '' INT; exec sleep 30"}));
  LaunchedTarget target(&child, {});
  NP_ASSERT_OK(target.Start());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(target.OnSignal({.number = SIGINT, .sender = 100 + i}), SignalVerdict::kContinue);
  }
  EXPECT_FALSE(target.stopped_waiting());
}

TEST(AttachedTargetTest, DoneWhenTheProcessIsGoneAndItsPidfdIsNoLongerWaitedOn) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"/bin/sleep", "30"}));
  NP_ASSERT_OK(child.Release());
  child.Signal(SIGKILL);  // not reaped: a zombie, gone for pidfd and the loop alike
  AttachedTarget target({child.pid()});
  RecordLoopOptions options;
  options.deadline = Soon();
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kTargetDone);
  ASSERT_EQ(target.fds().size(), 1u);
  EXPECT_EQ(target.fds()[0].fd, -1) << "an exited process's pidfd stays readable";
  EXPECT_EQ(target.exit_code(), 0);
}

TEST(AttachedTargetTest, RunsOnWhileTheProcessDoesAndSignalsStopTheLoop) {
  NP_ASSERT_OK_AND_ASSIGN(ChildProcess child, ChildProcess::Spawn({"/bin/sleep", "30"}));
  NP_ASSERT_OK(child.Release());
  AttachedTarget target({child.pid()});
  NP_ASSERT_OK(target.Start());
  EXPECT_FALSE(target.Done());
  EXPECT_EQ(target.OnSignal({.number = SIGINT}), SignalVerdict::kStop)
      << "and is not forwarded";
  EXPECT_FALSE(child.TryWait().has_value());
}

TEST(SelfTargetTest, DoneWhenAskedToStopAndTheRequestIsConsumed) {
  ScopedFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(stop.valid());
  const uint64_t one = 1;
  ASSERT_EQ(::write(stop.get(), &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  SelfTarget target(stop.get());
  RecordLoopOptions options;
  options.deadline = Soon();
  NP_ASSERT_OK_AND_ASSIGN(RecordLoopResult r, RunRecordLoop(target, options));
  EXPECT_EQ(r.end, LoopEnd::kTargetDone);
  uint64_t value = 0;
  EXPECT_LT(::read(stop.get(), &value, sizeof(value)), 0) << "the stop request was read";
}

}  // namespace
}  // namespace nativeprof::sampler
