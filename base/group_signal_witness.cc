#include "base/group_signal_witness.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/errno_status.h"

namespace nativeprof {
namespace {

struct Report {
  int32_t number;
  int32_t sender;
};

// Reports kept unclaimed at most: a terminal's signals (sender 0) are reported too and never
// asked about.
constexpr size_t kMaxUnclaimed = 64;

// The witness, in the forked child: async-signal-safe calls only.
[[noreturn]] void RunWitness(const sigset_t& signals, pid_t parent, int report_fd) {
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the parent died before the line above
  // Nothing of the parent's stays open here: a pipe or terminal it shares with nativeprof's
  // caller must close when nativeprof's copy does.
  if (::dup2(report_fd, 3) != 3) ::_exit(1);
  for (int fd = 0; fd < 3; ++fd) ::close(fd);
  if (::syscall(SYS_close_range, 4u, ~0u, 0u) != 0) {
    for (int fd = 4; fd < 4096; ++fd) ::close(fd);
  }
  for (;;) {
    siginfo_t info;
    const int number = ::sigwaitinfo(&signals, &info);
    if (number < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);
    }
    const Report report{number, info.si_code == SI_KERNEL ? 0 : info.si_pid};
    // nativeprof gone (EPIPE, or SIGPIPE ends this): so is the reason to watch.
    if (::write(3, &report, sizeof(report)) != static_cast<ssize_t>(sizeof(report))) ::_exit(0);
  }
}

}  // namespace

absl::StatusOr<GroupSignalWitness> GroupSignalWitness::Start(const sigset_t& signals) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2");
  ScopedFd read_end(fds[0]), write_end(fds[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork (the process-group signal witness)");
  if (pid == 0) RunWitness(signals, parent, write_end.get());
  if (::fcntl(read_end.get(), F_SETFL, O_NONBLOCK) != 0) {
    absl::Status st = ErrnoError("fcntl(O_NONBLOCK)");
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return st;
  }
  GroupSignalWitness witness;
  witness.pid_ = pid;
  witness.reports_ = std::move(read_end);
  return witness;
}

GroupSignalWitness::~GroupSignalWitness() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void GroupSignalWitness::ReadReports() {
  Report report;
  while (::read(reports_.get(), &report, sizeof(report)) == static_cast<ssize_t>(sizeof(report))) {
    if (seen_.size() >= kMaxUnclaimed) seen_.erase(seen_.begin());
    seen_.emplace_back(report.number, report.sender);
  }
}

bool GroupSignalWitness::GroupWasSent(int number, pid_t sender) {
  if (pid_ <= 0) return false;
  ReadReports();
  auto it = std::find(seen_.begin(), seen_.end(), std::pair<int, pid_t>(number, sender));
  if (it == seen_.end()) return false;
  seen_.erase(it);
  return true;
}

}  // namespace nativeprof
