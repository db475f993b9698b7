// Reads process-directed signals (SIGINT/SIGTERM/SIGHUP by default) as data: the signals are
// blocked in the calling thread and delivered through a signalfd that a poll loop waits on like
// any other fd, so no signal handler ever runs inside nativeprof. `record` and `stat` read
// Ctrl-C this way; ChildProcess unblocks every signal in the child before exec, so the profiled
// command sees them as usual. Owned by the thread that created it (the mask is per thread and
// only threads created afterwards inherit it); not signal-safe.
#ifndef NATIVEPROF_BASE_SIGNAL_READER_H_
#define NATIVEPROF_BASE_SIGNAL_READER_H_

#include <signal.h>
#include <sys/types.h>

#include <vector>

#include "absl/status/statusor.h"
#include "base/scoped_fd.h"

namespace nativeprof {

struct SignalReaderOptions {
  std::vector<int> signals = {SIGINT, SIGTERM, SIGHUP};
  // What happens to signals of the set that arrived but were not read when the reader is
  // destroyed. False: they stay pending and are delivered as the old mask is restored (usually
  // their default action, ending the process). True: they are discarded first, for a command
  // whose Ctrl-C must never end it before it printed its results (`stat`).
  bool discard_unread = false;
};

class SignalReader {
 public:
  // Blocks `options.signals` in the calling thread and opens a non-blocking, close-on-exec
  // signalfd for them. Errors: the errno codes of sigprocmask/signalfd (kInvalidArgument,
  // kResourceExhausted when out of fds), with the mask left as it was.
  static absl::StatusOr<SignalReader> Create(const SignalReaderOptions& options = {});

  SignalReader(SignalReader&& other) noexcept;
  SignalReader& operator=(SignalReader&&) = delete;
  SignalReader(const SignalReader&) = delete;
  ~SignalReader();  // restores the mask the thread had before Create

  // Polls readable (POLLIN) while a signal of the set is pending.
  int fd() const { return fd_.get(); }
  // Consumes the next pending signal of the set and returns its number; 0 when none is pending.
  int Read();
  // Whether the signal Read() last returned was sent by the kernel (SI_KERNEL), as a terminal's
  // Ctrl-C, Ctrl-\\ and hangup are, rather than by a process (kill, timeout).
  bool last_from_kernel() const { return last_from_kernel_; }
  // The process that sent it (0 when the kernel did).
  pid_t last_sender() const { return last_sender_; }
  // Whether a signal of the set is pending, without consuming it.
  bool Pending() const;
  // The signals read (blocked in the creating thread).
  const sigset_t& set() const { return set_; }

 private:
  SignalReader() = default;

  ScopedFd fd_;
  sigset_t set_{};
  sigset_t old_mask_{};
  bool blocked_ = false;  // false in a moved-from reader: it restores nothing
  bool discard_unread_ = false;
  bool last_from_kernel_ = false;
  pid_t last_sender_ = 0;
};

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_SIGNAL_READER_H_
