// What a record loop (sampler/record_loop.h) runs against, and when it is done: a command that
// nativeprof launched (`record -- CMD`, `stat -- CMD`: done when it exited, signals forwarded to
// it), processes it attached to (`-p PID`: done when they are gone, a signal stops profiling and
// is not forwarded) or the library's own process (done when the host asks the reader to stop).
// Each target says which fds to wait on, how it takes a signal and what the run exits with. Used
// by the thread that runs the loop; not signal-safe.
#ifndef NATIVEPROF_SAMPLER_TARGET_H_
#define NATIVEPROF_SAMPLER_TARGET_H_

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/group_signal_witness.h"
#include "base/scoped_fd.h"
#include "sampler/child_process.h"

namespace nativeprof::sampler {

// What the loop does after a target took a signal.
enum class SignalVerdict { kContinue, kStop };

// A signal the loop read from its SignalReader.
struct ReceivedSignal {
  int number = 0;
  // The kernel sent it (SI_KERNEL: Ctrl-C, Ctrl-\\, a hangup), to the terminal's whole
  // foreground process group.
  bool from_terminal = false;
  pid_t sender = 0;  // the process that sent it; 0 when the kernel did
};

class Target {
 public:
  virtual ~Target() = default;

  // Called once by the loop before its first wait (a launched command execs now, attached
  // processes get their pidfds). Errors: those of the concrete target.
  virtual absl::Status Start() = 0;
  // The fds whose readiness may mean the target is done. The loop waits on them and fills their
  // revents before each Done(); an entry whose fd the target set to -1 is no longer waited on.
  // Valid from Start() on; the span's size does not change after Start().
  virtual std::span<pollfd> fds() = 0;
  // True once the target is done; asked after every wakeup.
  virtual bool Done() = 0;
  // A signal the loop read (only loops that read signals call this).
  virtual SignalVerdict OnSignal(const ReceivedSignal& signal) = 0;
  // The longest the loop may wait before asking Done() again: -1 when the fds report the end,
  // a short time when Done() has to look for it (no pidfd).
  virtual int max_wait_ms() const = 0;
  // What the run exits with once the loop ended (a shell-style code; 0 when nothing was launched).
  virtual int exit_code() const = 0;
};

struct LaunchedTargetOptions {
  // `record`: the first signal is forwarded and nativeprof drains until the command exits (it
  // decides how to end, as with perf); a second signal (SIGINT, SIGTERM or SIGHUP: what
  // `timeout -k`, systemd and CI runners send before SIGKILL) stops waiting for a command that
  // does not end. False (`stat`): every signal is forwarded, as perf stat does. Either way a
  // signal from the terminal is not forwarded to a command in nativeprof's process group, which
  // the terminal signalled already.
  bool second_sigint_stops_waiting = false;
  // Says whether a signal a process sent was sent to the whole group (which the command, in
  // that group, then got itself) or to nativeprof alone; null: assumed alone.
  GroupSignalWitness* group_witness = nullptr;
};

// A command started by ChildProcess::Spawn and not yet released; Start() releases it to exec.
class LaunchedTarget final : public Target {
 public:
  // `child` must outlive this target.
  LaunchedTarget(ChildProcess* child, const LaunchedTargetOptions& options);

  // Errors: those of ChildProcess::Release (kNotFound, kPermissionDenied, ... for a failed exec).
  absl::Status Start() override;
  std::span<pollfd> fds() override;
  // Also reaps the command's orphans that exited (ChildProcess::ReapOrphans).
  bool Done() override;
  // A process-sent signal is forwarded kGroupCopyWaitMs later (by Done()), unless its copy
  // arrives first: see kGroupCopyWindowMs.
  SignalVerdict OnSignal(const ReceivedSignal& signal) override;
  // Without a pidfd (Linux < 5.3) waitpid is asked every 10 ms; sooner when a forward is due.
  int max_wait_ms() const override;

  // The same signal from the same process within this of the first is a copy of it, not a
  // second one: `timeout` (without --foreground) signals nativeprof and then its whole process
  // group, and the command, in that group, got the copy directly. Counted as a second signal it
  // made nativeprof stop waiting and SIGKILL a command shutting down gracefully.
  static constexpr int kGroupCopyWindowMs = 250;
  // How long a process-sent signal waits, before it is forwarded, for that copy (timeout sends
  // the two back to back) or for the group witness to report it.
  static constexpr int kGroupCopyWaitMs = 20;
  // How long the forward then waits for the witness's answer (GroupSignalWitness::GroupWasSent):
  // a loaded machine may not have run the witness since the signal came.
  static constexpr int kWitnessAnswerMs = 1000;

  // The wait status once the command exited and was reaped.
  std::optional<int> wait_status() const { return wait_status_; }
  // The command's exit status, 128 + signal if it died on one, or 128 + SIGINT when nativeprof
  // stopped waiting for it.
  int exit_code() const override;
  bool forwarded_signal() const { return forwarded_signal_; }
  bool stopped_waiting() const { return stopped_waiting_; }

 private:
  // Whether the command is still in nativeprof's process group (it did not setsid or start a
  // job of its own), where every signal sent to the group reached it too.
  bool InOurProcessGroup() const;
  // Whether `signal` was sent to the group, so the command in it has it already: as far as the
  // witness has said, or as it answers when asked (`ask_witness`).
  bool CommandGotItFromTheGroup(int number, pid_t sender, bool ask_witness) const;

  ChildProcess* child_;
  LaunchedTargetOptions options_;
  pollfd pidfd_{-1, POLLIN, 0};
  std::optional<int> wait_status_;
  int signals_ = 0;
  // The last process-sent signal counted, for telling its copy.
  ReceivedSignal last_sent_;
  std::chrono::steady_clock::time_point last_sent_at_;
  // A signal to forward once its copy has had kGroupCopyWaitMs to arrive.
  struct PendingForward {
    int number = 0;
    pid_t sender = 0;
    std::chrono::steady_clock::time_point due;
  };
  std::optional<PendingForward> pending_forward_;
  bool forwarded_signal_ = false;
  bool stopped_waiting_ = false;
};

// Running processes nativeprof does not own: done when every one of them has exited.
class AttachedTarget final : public Target {
 public:
  explicit AttachedTarget(std::vector<pid_t> pids);

  // Opens a pidfd per process; never fails (a process without one is looked for by signal 0).
  absl::Status Start() override;
  std::span<pollfd> fds() override { return std::span<pollfd>(pollfds_); }
  bool Done() override;
  // Signals stop profiling; the processes keep running.
  SignalVerdict OnSignal(const ReceivedSignal& signal) override;
  int max_wait_ms() const override;
  int exit_code() const override { return 0; }

 private:
  std::vector<pid_t> pids_;
  std::vector<ScopedFd> pidfds_;
  std::vector<pollfd> pollfds_;  // one per valid pidfd
  size_t exited_ = 0;
};

// The profiling process itself (libnativeprof's reader thread): done when `stop_fd`, an eventfd
// that someone else owns and writes once, becomes readable; Done() consumes that write.
class SelfTarget final : public Target {
 public:
  explicit SelfTarget(int stop_fd) : stop_{stop_fd, POLLIN, 0} {}

  absl::Status Start() override { return absl::OkStatus(); }
  std::span<pollfd> fds() override { return std::span<pollfd>(&stop_, 1); }
  bool Done() override;
  SignalVerdict OnSignal(const ReceivedSignal&) override { return SignalVerdict::kStop; }
  int max_wait_ms() const override { return -1; }
  int exit_code() const override { return 0; }

 private:
  pollfd stop_;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_TARGET_H_
