#include "base/group_signal_witness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/errno_status.h"

namespace nativeprof {
namespace {

// What the witness writes: a signal the group was sent, or (number 0, which no signal has) the
// answer to question `sender`.
struct Report {
  int32_t number;
  int32_t sender;
};

// Reports kept unclaimed at most: a terminal's signals (sender 0) are reported too and never
// asked about.
constexpr size_t kMaxUnclaimed = 64;

constexpr int kSocketFd = 3;  // the witness's end of the socket

// Its name and command line (GroupSignalWitness::kProcessName) in place of nativeprof's.
// Async-signal-safe: only the child's own copy of the argument bytes is rewritten, and only
// when they are where the kernel's /proc/self/cmdline reads them (argv[0] onwards).
void RenameWitness() {
  (void)::prctl(PR_SET_NAME, GroupSignalWitness::kProcessName);
  char original[4096];
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t size = ::read(fd, original, sizeof(original));
  ::close(fd);
  char* args = program_invocation_name;
  // A command line longer than the buffer is left as it is rather than half rewritten.
  if (size <= 0 || size == static_cast<ssize_t>(sizeof(original)) || args == nullptr ||
      std::memcmp(args, original, static_cast<size_t>(size)) != 0) {
    return;
  }
  std::memset(args, 0, static_cast<size_t>(size));
  const size_t name = std::min(std::strlen(GroupSignalWitness::kProcessName),
                               static_cast<size_t>(size) - 1);
  std::memcpy(args, GroupSignalWitness::kProcessName, name);
}

// The witness, in the forked child: async-signal-safe calls only.
[[noreturn]] void RunWitness(const sigset_t& signals, pid_t parent, int socket_fd) {
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the parent died before the line above
  RenameWitness();
  // Nothing of the parent's stays open here: a pipe or terminal it shares with nativeprof's
  // caller must close when nativeprof's copy does.
  if (::dup2(socket_fd, kSocketFd) != kSocketFd) ::_exit(1);
  for (int fd = 0; fd < kSocketFd; ++fd) ::close(fd);
  if (::syscall(SYS_close_range, kSocketFd + 1u, ~0u, 0u) != 0) {
    for (int fd = kSocketFd + 1; fd < 4096; ++fd) ::close(fd);
  }
  const int signal_fd = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) ::_exit(1);
  for (;;) {
    pollfd fds[2] = {{signal_fd, POLLIN, 0}, {kSocketFd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);
    }
    uint32_t questions[16];
    ssize_t asked = 0;
    if (fds[1].revents != 0) {
      asked = ::read(kSocketFd, questions, sizeof(questions));
      if (asked == 0 || (asked < 0 && errno != EINTR && errno != EAGAIN)) ::_exit(0);
      asked = std::max<ssize_t>(asked, 0);
    }
    // Read after the questions: every signal queued before nativeprof asked is among these.
    signalfd_siginfo info;
    while (::read(signal_fd, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
      const Report report{static_cast<int32_t>(info.ssi_signo),
                          info.ssi_code == SI_KERNEL ? 0 : static_cast<int32_t>(info.ssi_pid)};
      // nativeprof gone (EPIPE, or SIGPIPE ends this): so is the reason to watch.
      if (::write(kSocketFd, &report, sizeof(report)) != static_cast<ssize_t>(sizeof(report))) {
        ::_exit(0);
      }
    }
    for (ssize_t i = 0; i + 4 <= asked; i += 4) {
      const Report answer{0, static_cast<int32_t>(questions[i / 4])};
      if (::write(kSocketFd, &answer, sizeof(answer)) != static_cast<ssize_t>(sizeof(answer))) {
        ::_exit(0);
      }
    }
  }
}

}  // namespace

absl::StatusOr<GroupSignalWitness> GroupSignalWitness::Start(const sigset_t& signals) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return ErrnoError("socketpair");
  }
  ScopedFd ours(fds[0]), theirs(fds[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork (the process-group signal witness)");
  if (pid == 0) RunWitness(signals, parent, theirs.get());
  if (::fcntl(ours.get(), F_SETFL, O_NONBLOCK) != 0) {
    absl::Status st = ErrnoError("fcntl(O_NONBLOCK)");
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return st;
  }
  GroupSignalWitness witness;
  witness.pid_ = pid;
  witness.socket_ = std::move(ours);
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
  while (::read(socket_.get(), &report, sizeof(report)) == static_cast<ssize_t>(sizeof(report))) {
    if (report.number == 0) {
      answered_ = static_cast<uint32_t>(report.sender);
      continue;
    }
    if (seen_.size() >= kMaxUnclaimed) seen_.erase(seen_.begin());
    seen_.emplace_back(report.number, report.sender);
  }
}

bool GroupSignalWitness::Claim(int number, pid_t sender) {
  auto it = std::find(seen_.begin(), seen_.end(), std::pair<int, pid_t>(number, sender));
  if (it == seen_.end()) return false;
  seen_.erase(it);
  return true;
}

bool GroupSignalWitness::GroupWasSent(int number, pid_t sender, std::chrono::milliseconds wait) {
  if (pid_ <= 0) return false;
  ReadReports();
  if (Claim(number, sender)) return true;
  if (wait <= std::chrono::milliseconds::zero()) return false;
  const uint32_t question = ++asked_;
  if (::send(socket_.get(), &question, sizeof(question), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(sizeof(question))) {
    return false;  // the witness is gone
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // Answers come in order: a late one to an earlier question is not this one's.
  while (answered_ != question) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds::zero()) break;
    pollfd p{socket_.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    ReadReports();
    if ((p.revents & (POLLHUP | POLLERR)) != 0) break;  // the witness is gone
  }
  return Claim(number, sender);
}

}  // namespace nativeprof
