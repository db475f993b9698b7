#include "base/signal_reader.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/errno_status.h"

namespace nativeprof {

absl::StatusOr<SignalReader> SignalReader::Create(const SignalReaderOptions& options) {
  SignalReader reader;
  sigemptyset(&reader.set_);
  for (int sig : options.signals) {
    if (sigaddset(&reader.set_, sig) != 0) return ErrnoError("sigaddset");
  }
  // Blocked before the signalfd exists, so a signal that arrives in between stays pending for it
  // instead of running the default action.
  if (sigprocmask(SIG_BLOCK, &reader.set_, &reader.old_mask_) != 0) {
    return ErrnoError("sigprocmask(SIG_BLOCK)");
  }
  reader.blocked_ = true;
  reader.discard_unread_ = options.discard_unread;
  reader.fd_.Reset(signalfd(-1, &reader.set_, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!reader.fd_.valid()) return ErrnoError("signalfd");  // ~SignalReader restores the mask
  return reader;
}

SignalReader::SignalReader(SignalReader&& other) noexcept
    : fd_(std::move(other.fd_)),
      set_(other.set_),
      old_mask_(other.old_mask_),
      blocked_(std::exchange(other.blocked_, false)),
      discard_unread_(other.discard_unread_) {}

SignalReader::~SignalReader() {
  if (!blocked_) return;
  if (discard_unread_ && fd_.valid()) {
    while (Read() != 0) {
    }
  }
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

int SignalReader::Read() {
  signalfd_siginfo info;
  ssize_t n;
  do {
    n = ::read(fd_.get(), &info, sizeof(info));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(info))) return 0;
  last_from_kernel_ = info.ssi_code == SI_KERNEL;
  last_sender_ = last_from_kernel_ ? 0 : static_cast<pid_t>(info.ssi_pid);
  return static_cast<int>(info.ssi_signo);
}

bool SignalReader::Pending() const {
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&set_, sig) == 1 && sigismember(&pending, sig) == 1) return true;
  }
  return false;
}

}  // namespace nativeprof
