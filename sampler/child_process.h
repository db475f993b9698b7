// Starts the profiled command: fork, let the parent open perf events on the child while it waits
// on a pipe, then release it to exec. An exec failure comes back through a close-on-exec pipe, so
// "cannot execute" is reported as an error rather than as a child exit code. Owned by the main
// thread; not signal-safe.
#ifndef NATIVEPROF_SAMPLER_CHILD_PROCESS_H_
#define NATIVEPROF_SAMPLER_CHILD_PROCESS_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"

namespace nativeprof::sampler {

struct SpawnOptions {
  // The nice value the child sets before exec: the one the profiler was started with, when the
  // profiler raised its own priority with SCHED_RESET_ON_FORK (which starts the child at nice 0).
  std::optional<int> nice;
  // The directory the command runs in; empty: the profiler's own. (`cargo nativeprof` runs
  // benches and tests in their package directory, as Cargo does.)
  std::string working_directory;
  // Variables set (or replaced) in the command's environment, which is otherwise the profiler's.
  std::vector<std::pair<std::string, std::string>> set_environment;
  // FindProgram's answer for argv[0], when the caller asked it first (to fail before setting
  // anything up); empty: Spawn searches itself.
  std::string program_path;
  // Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER, Linux 3.4) before the fork: a
  // process of the command's tree whose parent dies (a job the command left in the background,
  // a descendant of a command killed) comes to this process rather than to init, where it can
  // still be found and killed without any risk of pid reuse (a child's pid is not given out
  // again before its parent reaps it). Process-wide, and for the rest of this process's life:
  // what the command leaves behind after the profiler exits goes on to init.
  bool adopt_orphans = false;
  // With `adopt_orphans`: this process's children that are not the command's (the group-signal
  // witness), never reaped or killed as the command's orphans. Every child this process has while
  // the ChildProcess lives must be either the command, one of its tree, or named here.
  std::vector<pid_t> other_children;
};

// The file that Spawn's child would exec for `program` (execvp's search: PATH when it has no '/',
// PATH and relative paths as the child sees them, with `options`' environment and working
// directory). Asked before spawning so a command that cannot run fails before anything else is
// set up or said. Errors, as exec's would be: "cannot execute 'foo': No such file or directory"
// (kNotFound), or Permission denied (kPermissionDenied) for a file or directory that cannot be
// executed. A file found here may still fail to exec (a bad interpreter, say): Release reports
// that.
absl::StatusOr<std::string> FindProgram(const std::string& program,
                                        const SpawnOptions& options = {});

class ChildProcess {
 public:
  // Forks a child that blocks until Release(). `argv[0]` is searched in PATH like execvp.
  // Errors: kInvalidArgument (empty argv), fork/pipe errno codes.
  static absl::StatusOr<ChildProcess> Spawn(const std::vector<std::string>& argv,
                                            const SpawnOptions& options = {});

  ChildProcess(ChildProcess&&) noexcept;
  ChildProcess& operator=(ChildProcess&&) noexcept;
  // Kills (SIGKILL) and reaps a child that is still running and was not waited for; with
  // SpawnOptions::adopt_orphans, then every process of its tree, which a SIGKILL to the child
  // alone would leave running (a shell's foreground job). A child that exited and was waited for
  // leaves its tree alone: what it started in the background outlives it, as from a shell.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // A pidfd (pidfd_open) that polls readable when the child exits; -1 if unavailable.
  int pidfd() const { return pidfd_.get(); }

  // Lets the child exec. Returns OK once exec succeeded; if it failed, the child has exited and
  // the error is "cannot execute 'foo': No such file or directory" with the errno's code
  // (kNotFound for ENOENT, kPermissionDenied for EACCES, ...).
  absl::Status Release();

  // Non-blocking: the wait status if the child has exited (reaped now), else nullopt.
  std::optional<int> TryWait();
  // Blocks until the child exits (retrying EINTR); returns its wait status.
  int Wait();

  // The child's resource usage as its wait returned it, once reaped (ru_maxrss is the largest
  // resident set of the child and of the descendants it reaped); nullopt before.
  std::optional<rusage> usage() const {
    return reaped_ ? std::optional<rusage>(usage_) : std::nullopt;
  }

  // Sends `sig` to the child if it has not been reaped yet.
  void Signal(int sig);

  // Reaps the adopted orphans (SpawnOptions::adopt_orphans) that have exited, without blocking:
  // each would otherwise stay a zombie holding its pid until this process exits (pid_max may be
  // 32768). Call it while the command runs; a no-op without adopt_orphans.
  void ReapOrphans();

 private:
  ChildProcess(pid_t pid, ScopedFd release_fd, ScopedFd exec_error_fd);

  // Whether `pid`, a child of this process, is one of the command's adopted orphans.
  bool IsOrphan(pid_t pid) const;
  // This process's children that are adopted orphans, from /proc.
  std::vector<pid_t> Orphans() const;
  // SIGKILLs and reaps every adopted orphan and, as each dies and hands its children on to this
  // process, theirs, until the command's tree is gone.
  void KillOrphans();

  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  rusage usage_{};
  std::string program_;
  std::string program_path_;  // FindProgram's, to say why an exec of it failed
  ScopedFd release_fd_;     // write end: one byte (or close) releases the child
  ScopedFd exec_error_fd_;  // read end: EOF = exec succeeded, 4 bytes = exec's errno
  ScopedFd pidfd_;
  bool adopt_orphans_ = false;
  std::vector<pid_t> other_children_;
};

// Maps a wait status to a shell-style exit code: the exit status, or 128 + signal number.
int ExitCodeFromWaitStatus(int wait_status);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_CHILD_PROCESS_H_
