#include "sampler/target.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "sampler/record_loop.h"

namespace nativeprof::sampler {
namespace {

// How often a target without a pidfd is looked for: its exit is noticed (and the run's elapsed
// time measured) to within this.
constexpr int kNoPidfdWaitMs = 10;

}  // namespace

LaunchedTarget::LaunchedTarget(ChildProcess* child, const LaunchedTargetOptions& options)
    : child_(child), options_(options) {}

absl::Status LaunchedTarget::Start() {
  pidfd_.fd = child_->pidfd();
  return child_->Release();
}

std::span<pollfd> LaunchedTarget::fds() {
  return pidfd_.fd >= 0 ? std::span<pollfd>(&pidfd_, 1) : std::span<pollfd>();
}

bool LaunchedTarget::Done() {
  // Asked even after the second SIGINT: a command that exited meanwhile reports its own status.
  if (!wait_status_.has_value()) wait_status_ = child_->TryWait();
  child_->ReapOrphans();
  if (pending_forward_.has_value() && std::chrono::steady_clock::now() >= pending_forward_->due) {
    if (!wait_status_.has_value() &&
        !CommandGotItFromTheGroup(pending_forward_->number, pending_forward_->sender,
                                  /*ask_witness=*/true)) {
      child_->Signal(pending_forward_->number);
    }
    pending_forward_.reset();
  }
  return wait_status_.has_value() || stopped_waiting_;
}

bool LaunchedTarget::InOurProcessGroup() const {
  return ::getpgid(child_->pid()) == ::getpgrp();
}

bool LaunchedTarget::CommandGotItFromTheGroup(int number, pid_t sender, bool ask_witness) const {
  const auto wait = std::chrono::milliseconds(ask_witness ? kWitnessAnswerMs : 0);
  return options_.group_witness != nullptr &&
         options_.group_witness->GroupWasSent(number, sender, wait) && InOurProcessGroup();
}

SignalVerdict LaunchedTarget::OnSignal(const ReceivedSignal& signal) {
  const auto now = std::chrono::steady_clock::now();
  if (!signal.from_terminal && signal.sender != 0 && signals_ > 0 &&
      signal.number == last_sent_.number && signal.sender == last_sent_.sender &&
      now - last_sent_at_ < std::chrono::milliseconds(kGroupCopyWindowMs)) {
    // The copy the sender's group signal left here: the command has its own, so the first is
    // not forwarded too (unless the command left the group, and the copy missed it). The
    // witness's report of it is used up with it.
    if (options_.group_witness != nullptr) {
      (void)options_.group_witness->GroupWasSent(signal.number, signal.sender);
    }
    if (pending_forward_.has_value() && InOurProcessGroup()) pending_forward_.reset();
    return SignalVerdict::kContinue;
  }
  ++signals_;
  if (options_.second_sigint_stops_waiting && signals_ > 1) {
    // Done() ends the loop; the command keeps what it was sent so far.
    stopped_waiting_ = true;
    return SignalVerdict::kContinue;
  }
  forwarded_signal_ = true;
  if (signal.from_terminal) {
    // One Ctrl-C must reach the command once: a second copy reads as a second Ctrl-C (a forced
    // quit) to a program that shuts down gracefully on the first. A command that left the
    // group (setsid, its own job) did not get the terminal's and is sent it.
    if (!InOurProcessGroup()) child_->Signal(signal.number);
    return SignalVerdict::kContinue;
  }
  last_sent_ = signal;
  last_sent_at_ = now;
  // Sent to the group (kill -INT -PGID, or timeout's copy merged into this one by the kernel):
  // the command has it.
  if (CommandGotItFromTheGroup(signal.number, signal.sender, /*ask_witness=*/false)) {
    return SignalVerdict::kContinue;
  }
  pending_forward_ = PendingForward{signal.number, signal.sender,
                                    now + std::chrono::milliseconds(kGroupCopyWaitMs)};
  return SignalVerdict::kContinue;
}

int LaunchedTarget::max_wait_ms() const {
  const int wait = pidfd_.fd >= 0 ? -1 : kNoPidfdWaitMs;
  return pending_forward_.has_value() ? WaitMs(pending_forward_->due, wait) : wait;
}

int LaunchedTarget::exit_code() const {
  return wait_status_.has_value() ? ExitCodeFromWaitStatus(*wait_status_) : 128 + SIGINT;
}

AttachedTarget::AttachedTarget(std::vector<pid_t> pids) : pids_(std::move(pids)) {}

absl::Status AttachedTarget::Start() {
  for (pid_t pid : pids_) {
    // pidfd_open is Linux 5.3+; without it Done() looks for the processes by signal 0.
    ScopedFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!fd.valid()) continue;
    pollfds_.push_back({fd.get(), POLLIN, 0});
    pidfds_.push_back(std::move(fd));
  }
  return absl::OkStatus();
}

bool AttachedTarget::Done() {
  for (pollfd& p : pollfds_) {
    // An exited process's pidfd stays readable: stop waiting on it, or every later poll() would
    // return at once while the other processes run.
    if (p.fd >= 0 && (p.revents & POLLIN)) {
      p.fd = -1;
      ++exited_;
    }
  }
  if (!pollfds_.empty()) return exited_ == pollfds_.size();
  for (pid_t pid : pids_) {
    // EPERM: it exists but belongs to someone else.
    if (::kill(pid, 0) == 0 || errno == EPERM) return false;
  }
  return true;
}

SignalVerdict AttachedTarget::OnSignal(const ReceivedSignal&) { return SignalVerdict::kStop; }

int AttachedTarget::max_wait_ms() const { return pollfds_.empty() ? kNoPidfdWaitMs : -1; }

bool SelfTarget::Done() {
  if ((stop_.revents & POLLIN) == 0) return false;
  uint64_t value = 0;
  while (::read(stop_.fd, &value, sizeof(value)) < 0 && errno == EINTR) {
  }
  return true;
}

}  // namespace nativeprof::sampler
