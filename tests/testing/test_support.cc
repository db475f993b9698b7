#include "tests/testing/test_support.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

extern char** environ;

namespace nativeprof::testing {

std::string TargetPath(const std::string& name) {
  return std::string(NATIVEPROF_TARGETS_DIR) + "/" + name;
}

std::string SourcePath(const std::string& relative) {
  return std::string(NATIVEPROF_SOURCE_DIR) + "/" + relative;
}

std::string NativeprofBinary() { return NATIVEPROF_BINARY; }

namespace {
std::vector<std::string>* TempDirs() {
  static std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>();
    std::atexit([] {
      if (std::getenv("NATIVEPROF_KEEP_TEST_FILES") != nullptr) return;
      for (const std::string& d : *TempDirs()) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    });
    return v;
  }();
  return dirs;
}
}  // namespace

std::string MakeTempDir(const char* parent) {
  if (parent == nullptr) parent = std::getenv("TMPDIR");
  std::string templ = std::string(parent ? parent : "/tmp") + "/nativeprof-test-XXXXXX";
  char* made = ::mkdtemp(templ.data());
  if (made == nullptr) {
    ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    return "/tmp";
  }
  TempDirs()->push_back(made);
  return made;
}

std::string MakeMemoryTempDir() {
  constexpr const char* kShm = "/dev/shm";
  struct stat st;
  const bool usable = ::stat(kShm, &st) == 0 && S_ISDIR(st.st_mode) && ::access(kShm, W_OK) == 0;
  return MakeTempDir(usable ? kShm : nullptr);
}

CommandResult RunCommand(const std::vector<std::string>& argv) {
  CommandResult result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ADD_FAILURE() << "posix_spawnp " << argv[0] << ": " << std::strerror(rc);
    return result;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.max_rss_kb = usage.ru_maxrss;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, bool capture_stdout,
                                     bool own_process_group) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (own_process_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  int write_end = -1;
  if (capture_stdout) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) == 0) {
      posix_spawn_file_actions_adddup2(&actions, p[1], 1);
      out_fd_ = p[0];
      write_end = p[1];
    }
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (::posix_spawn(&pid_, args[0], &actions, &attr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (write_end >= 0) ::close(write_end);
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
}

std::string BackgroundProcess::ReadLine() {
  std::string line;
  char c;
  while (out_fd_ >= 0 && ::read(out_fd_, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

int BackgroundProcess::Wait() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return status;
}

CommandResult RunCommandKilledAtFirstRename(const std::vector<std::string>& argv, pid_t* pid) {
  CommandResult result;
  const std::string dir = MakeTempDir();
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    result.err = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (child == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
        ::dup2(err, 2) < 0 || ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) {
      ::_exit(125);
    }
    ::raise(SIGSTOP);  // wait for the tracer's options
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  *pid = child;
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFSTOPPED(status) ||
      ::ptrace(PTRACE_SETOPTIONS, child, nullptr,
               PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL) != 0) {
    result.err = std::string("ptrace refused: ") + std::strerror(errno);
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    return result;
  }
  int deliver = 0;
  while (true) {
    if (::ptrace(PTRACE_SYSCALL, child, nullptr, deliver) != 0) break;
    deliver = 0;
    if (::waitpid(child, &status, 0) != child || WIFEXITED(status) || WIFSIGNALED(status)) break;
    const int sig = WSTOPSIG(status);
    if (sig == (SIGTRAP | 0x80)) {
      __ptrace_syscall_info info{};
      if (::ptrace(PTRACE_GET_SYSCALL_INFO, child, sizeof(info), &info) > 0 &&
          info.op == PTRACE_SYSCALL_INFO_ENTRY &&
          (info.entry.nr == SYS_rename || info.entry.nr == SYS_renameat ||
           info.entry.nr == SYS_renameat2)) {
        ::kill(child, SIGKILL);
      }
    } else if (sig != SIGTRAP) {
      deliver = sig;  // a real signal: pass it on (the exec stop is SIGTRAP | event << 8)
    }
  }
  while (!WIFEXITED(status) && !WIFSIGNALED(status)) {
    if (::waitpid(child, &status, 0) < 0 && errno != EINTR) break;
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = ReadFileOrEmpty(out_path);
  result.err = ReadFileOrEmpty(err_path);
  return result;
}

pid_t ReapedPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return pid;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// 0 when the event opens (and closes it again), else -1 with errno set.
int OpenUserEventOnSelf(uint32_t type, uint64_t config) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  const int err = errno;
  if (fd >= 0) ::close(fd);
  errno = err;
  return fd < 0 ? -1 : 0;
}

}  // namespace

bool PerfEventOpens(uint32_t type, uint64_t config) {
  return OpenUserEventOnSelf(type, config) == 0;
}

bool PerfEventsAvailable(std::string* why) {
  static std::once_flag once;
  static bool ok = false;
  static std::string reason;
  std::call_once(once, [] {
    if (OpenUserEventOnSelf(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK) != 0) {
      reason = std::string("perf_event_open(cpu-clock) failed: ") + std::strerror(errno) +
               "; check /proc/sys/kernel/perf_event_paranoid";
      return;
    }
    ok = true;
  });
  if (!ok && why != nullptr) *why = reason;
  return ok;
}

}  // namespace nativeprof::testing
