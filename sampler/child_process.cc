#include "sampler/child_process.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/elf_segments.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/scheduling.h"

namespace nativeprof::sampler {
namespace {

// Runs in the forked child: only async-signal-safe calls until exec.
// `binary_path`: the program when it is a binary file (LooksBinary), run with execve so that a
// kernel that cannot run it says so (ENOEXEC); execvpe would hand it to /bin/sh as a script,
// which printed 'Syntax error: "(" unexpected' for an i386 program. Null: execvpe, whose
// fallback runs a script without a #! line with /bin/sh, as shells do.
[[noreturn]] void ChildMain(int release_fd, int error_fd, int parents_ends[2], char** argv,
                            char** envp, std::optional<int> nice,
                            const char* working_directory, const char* binary_path) {
  // The parent's ends of both pipes: with the release pipe's write end open here too, the read
  // below would never see the end of file that a parent killed before releasing leaves, and the
  // child would wait forever.
  ::close(parents_ends[0]);
  ::close(parents_ends[1]);
  // Restore default dispositions the parent may have changed, so the target behaves as if run
  // from a shell (SIGINT terminates it, SIGPIPE is not ignored).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGQUIT, SIGHUP}) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // A positive nice is always permitted; a negative one only where it was before (root). If
  // refused, nice 0 is the closest the child can get.
  if (nice.has_value()) (void)::setpriority(PRIO_PROCESS, 0, *nice);

  char byte;
  ssize_t n;
  do {
    n = ::read(release_fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(127);  // the parent went away or gave up: never run the command unprofiled
  ::close(release_fd);
  if (working_directory != nullptr && ::chdir(working_directory) != 0) {
    int err = errno;
    ssize_t ignored = ::write(error_fd, &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  if (binary_path != nullptr) {
    ::execve(binary_path, argv, envp);
  } else {
    ::execvpe(argv[0], argv, envp);
  }
  int err = errno;
  ssize_t ignored = ::write(error_fd, &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

// Whether `path` is a binary file by bash's test: a NUL byte in its first line (first 80 bytes).
// Such a file that exec cannot run is not a script for /bin/sh.
bool LooksBinary(const std::string& path) {
  const ScopedFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file.valid()) return false;
  char head[80];
  const ssize_t n = ::pread(file.get(), head, sizeof(head), 0);
  for (ssize_t i = 0; i < n && head[i] != '\n'; ++i) {
    if (head[i] == '\0') return true;
  }
  return false;
}

// 0 when `path` is a file exec may run, else the errno exec would fail with.
int ExecErrorOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR ? ENOENT : errno;
  if (!S_ISREG(st.st_mode)) return EACCES;
  return ::access(path.c_str(), X_OK) == 0 ? 0 : EACCES;
}

// Why exec of an existing file said ENOENT: the interpreter it names is missing (a script's
// "#!" line, or an ELF's PT_INTERP: a binary built for musl or another architecture's loader).
// "" when neither explains it.
std::string MissingInterpreter(const std::string& path) {
  const ScopedFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file.valid()) return "";
  const int fd = file.get();
  char head[4096];
  const ssize_t n = ::pread(fd, head, sizeof(head), 0);
  std::string interpreter;
  if (n > 2 && head[0] == '#' && head[1] == '!') {
    const absl::string_view line = absl::string_view(head, static_cast<size_t>(n)).substr(2);
    const absl::string_view rest =
        absl::StripLeadingAsciiWhitespace(line.substr(0, line.find('\n')));
    // The kernel keeps a '\r' (a script saved with Windows line endings) in the name it looks up.
    interpreter = std::string(rest.substr(0, rest.find_first_of(" \t")));
  } else {
    ForEachElfSegment(fd, PT_INTERP, 4096, [&interpreter](absl::string_view name) {
      interpreter = std::string(name.substr(0, name.find('\0')));
      return false;
    });
  }
  if (interpreter.empty() || ::access(interpreter.c_str(), F_OK) == 0) return "";
  if (interpreter.back() == '\r') {
    return "its #! line ends in a carriage return (Windows line endings): convert it with "
           "dos2unix or sed -i 's/\\r$//'";
  }
  return absl::StrCat("its interpreter ", interpreter, " does not exist");
}

}  // namespace

absl::StatusOr<std::string> FindProgram(const std::string& program, const SpawnOptions& options) {
  auto in_child = [&options](absl::string_view path) {
    if (absl::StartsWith(path, "/") || options.working_directory.empty()) return std::string(path);
    return absl::StrCat(options.working_directory, "/", path);
  };
  auto error = [&program](int err) {
    return ErrnoError(err, absl::StrCat("cannot execute '", program, "'"));
  };
  if (program.empty()) return error(ENOENT);
  if (program.find('/') != std::string::npos) {
    const std::string path = in_child(program);
    // A directory named as the command is said to be one, as a shell says it (execve's EACCES).
    if (struct stat st {}; ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return error(EISDIR);
    }
    if (const int err = ExecErrorOf(path); err != 0) return error(err);
    return path;
  }
  std::optional<std::string> path_variable;
  for (const auto& [name, value] : options.set_environment) {
    if (name == "PATH") path_variable = value;
  }
  if (!path_variable.has_value()) {
    const char* env = std::getenv("PATH");
    path_variable = env != nullptr ? env : "/bin:/usr/bin";  // glibc's execvp without PATH
  }
  int err = ENOENT;  // as execvp: EACCES if some candidate was refused, else ENOENT
  for (absl::string_view dir : absl::StrSplit(*path_variable, ':')) {
    const std::string candidate = in_child(absl::StrCat(dir.empty() ? "." : dir, "/", program));
    const int e = ExecErrorOf(candidate);
    if (e == 0) return candidate;
    if (e == EACCES) err = EACCES;
  }
  return error(err);
}

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                 const SpawnOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("no command given");
  int release_pipe[2];
  int error_pipe[2];
  if (::pipe2(release_pipe, O_CLOEXEC) != 0) return ErrnoError("pipe");
  ScopedFd release_read(release_pipe[0]), release_write(release_pipe[1]);
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return ErrnoError("pipe");
  ScopedFd error_read(error_pipe[0]), error_write(error_pipe[1]);

  // Built before fork: the child may not allocate.
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    const absl::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [n, v] : options.set_environment) replaced |= name == n;
    if (!replaced) env_strings.emplace_back(entry);
  }
  for (const auto& [n, v] : options.set_environment) env_strings.push_back(absl::StrCat(n, "=", v));
  std::vector<char*> cenv;
  cenv.reserve(env_strings.size() + 1);
  for (std::string& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  absl::StatusOr<std::string> path = options.program_path.empty()
                                         ? FindProgram(argv[0], options)
                                         : absl::StatusOr<std::string>(options.program_path);
  // A name with a '/' is run as given, relative to the child's working directory (as execvpe
  // would); one found on PATH by its path there.
  const bool binary = path.ok() && LooksBinary(*path);
  const char* binary_path =
      !binary ? nullptr : argv[0].find('/') != std::string::npos ? cargv[0] : path->c_str();

  // Before the fork, so that not even a process the command starts at once can be orphaned to
  // init. Refused only by kernels before 3.4: the child alone is killed then, as it always was.
  const bool adopting =
      options.adopt_orphans && ::prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) == 0;
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork");
  if (pid == 0) {
    int parents_ends[2] = {release_write.get(), error_read.get()};
    ChildMain(release_read.get(), error_write.get(), parents_ends, cargv.data(), cenv.data(),
              options.nice,
              options.working_directory.empty() ? nullptr : options.working_directory.c_str(),
              binary_path);
  }

  ChildProcess child(pid, std::move(release_write), std::move(error_read));
  child.program_ = argv[0];
  if (path.ok()) child.program_path_ = *std::move(path);
  child.adopt_orphans_ = adopting;
  child.other_children_ = options.other_children;
  return child;
}

ChildProcess::ChildProcess(pid_t pid, ScopedFd release_fd, ScopedFd exec_error_fd)
    : pid_(pid), release_fd_(std::move(release_fd)), exec_error_fd_(std::move(exec_error_fd)) {
  // pidfd_open is Linux 5.3+; without it the session falls back to polling waitpid.
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    pidfd_.Reset(fd);
  }
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      reaped_(other.reaped_),
      wait_status_(other.wait_status_),
      program_(std::move(other.program_)),
      program_path_(std::move(other.program_path_)),
      release_fd_(std::move(other.release_fd_)),
      exec_error_fd_(std::move(other.exec_error_fd_)),
      pidfd_(std::move(other.pidfd_)),
      adopt_orphans_(std::exchange(other.adopt_orphans_, false)),
      other_children_(std::move(other.other_children_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    this->~ChildProcess();
    new (this) ChildProcess(std::move(other));
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    // Reaped first: by the time a dead process can be waited for, the kernel has handed its
    // children to this process (exit_notify reparents them before the exit is reported).
    Wait();
    KillOrphans();
  }
}

absl::Status ChildProcess::Release() {
  if (!release_fd_.valid()) return absl::FailedPreconditionError("child already released");
  char go = 1;
  ssize_t n;
  do {
    n = ::write(release_fd_.get(), &go, 1);
  } while (n < 0 && errno == EINTR);
  release_fd_.Reset();
  int err = 0;
  ssize_t got;
  do {
    got = ::read(exec_error_fd_.get(), &err, sizeof(err));
  } while (got < 0 && errno == EINTR);
  exec_error_fd_.Reset();
  if (got == static_cast<ssize_t>(sizeof(err))) {
    Wait();
    if (err == ENOENT && !program_path_.empty()) {
      if (std::string missing = MissingInterpreter(program_path_); !missing.empty()) {
        return absl::NotFoundError(absl::StrCat("cannot execute '", program_, "': ", missing));
      }
    }
    if (err == ENOEXEC) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot execute '", program_, "': Exec format error: a binary file this machine cannot "
          "run (built for another architecture or system: `file ", program_, "` says which)"));
    }
    return ErrnoError(err, absl::StrCat("cannot execute '", program_, "'"));
  }
  return absl::OkStatus();
}

std::optional<int> ChildProcess::TryWait() {
  if (reaped_) return wait_status_;
  int status = 0;
  pid_t r = ::wait4(pid_, &status, WNOHANG, &usage_);
  if (r == pid_) {
    reaped_ = true;
    wait_status_ = status;
    return status;
  }
  return std::nullopt;
}

int ChildProcess::Wait() {
  if (reaped_) return wait_status_;
  int status = 0;
  while (::wait4(pid_, &status, 0, &usage_) < 0) {
    if (errno != EINTR) {
      status = 0;
      break;
    }
  }
  reaped_ = true;
  wait_status_ = status;
  return status;
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

bool ChildProcess::IsOrphan(pid_t pid) const {
  return adopt_orphans_ && pid != pid_ &&
         std::find(other_children_.begin(), other_children_.end(), pid) == other_children_.end();
}

void ChildProcess::ReapOrphans() {
  if (!adopt_orphans_) return;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: looked at before it is reaped, since the command and the other children are
    // their owners' to reap. waitid names the same exited child until it is reaped, so one of
    // those holds back the orphans until its owner reaps it (the command: at once, in
    // LaunchedTarget::Done) or this process exits.
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (!IsOrphan(info.si_pid)) return;
    (void)::waitpid(info.si_pid, nullptr, WNOHANG);
  }
}

std::vector<pid_t> ChildProcess::Orphans() const {
  // Found by the parent in each process's stat: /proc/PID/task/TID/children needs
  // CONFIG_PROC_CHILDREN, which kernels built without checkpoint/restore lack, and it can skip
  // an entry when the list changes between two reads. A child of this process stays listed in
  // /proc, as a zombie once it exits, until this process reaps it.
  std::vector<pid_t> orphans;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return orphans;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(proc)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid <= 0 || !IsOrphan(pid)) continue;
    absl::StatusOr<std::string> stat = ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"), 4096);
    if (!stat.ok()) continue;
    // fields[0] is field 3 (the state), so the parent (field 4) is fields[1].
    const std::vector<absl::string_view> fields = ProcStatFieldsAfterComm(*stat);
    pid_t parent = 0;
    if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &parent) && parent == self) {
      orphans.push_back(pid);
    }
  }
  ::closedir(proc);
  return orphans;
}

void ChildProcess::KillOrphans() {
  if (!adopt_orphans_) return;
  // Only this process's own children are signalled, never a pid read from further down the
  // tree, which could exit and be given to an unrelated process between the read and the kill.
  // So it goes one generation per round: each one killed and reaped hands its children here.
  // Done when a round finds none; a process of the tree that is still alive has an ancestor
  // among this process's children (or is one), so a round cannot miss them all.
  for (std::vector<pid_t> orphans = Orphans(); !orphans.empty(); orphans = Orphans()) {
    for (pid_t pid : orphans) ::kill(pid, SIGKILL);
    for (pid_t pid : orphans) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
}

int ExitCodeFromWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace nativeprof::sampler
