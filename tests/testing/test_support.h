// Helpers shared by the test binaries: status matchers (Debian's Abseil ships none), paths of the
// built test targets, running a command and capturing its output.
#ifndef NATIVEPROF_TESTS_TESTING_TEST_SUPPORT_H_
#define NATIVEPROF_TESTS_TESTING_TEST_SUPPORT_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::testing {

// Path of a test program built from tests/targets/.
std::string TargetPath(const std::string& name);
// Path of a file under the source tree (e.g. "tests/testdata/demangle/cpp.tsv").
std::string SourcePath(const std::string& relative);
// Path of the built nativeprof CLI.
std::string NativeprofBinary();
// A fresh empty directory under `parent` (default $TMPDIR, else /tmp), removed at process exit.
std::string MakeTempDir(const char* parent = nullptr);
// A fresh empty directory in memory (under /dev/shm where it is a writable directory, else as
// MakeTempDir), removed at process exit: for a test whose timing must not include a wait for the
// file system's journal, which on a CPU-saturated machine runs behind every other task.
std::string MakeMemoryTempDir();

struct CommandResult {
  int exit_code = -1;  // exit status, or 128 + signal
  std::string out;     // stdout
  std::string err;     // stderr
  long max_rss_kb = 0;  // peak resident set of the command itself (ru_maxrss)
};

// Runs argv (no shell) with stdin from /dev/null; waits for it.
CommandResult RunCommand(const std::vector<std::string>& argv);

// A process started in the background (no shell), killed (SIGKILL) and reaped when the object
// goes away unless Wait() reaped it first.
class BackgroundProcess {
 public:
  // pid() is -1 when the spawn failed. With `capture_stdout`, ReadLine() reads its stdout. With
  // `own_process_group` it leads a process group of its own (as a shell job, or under timeout),
  // whose id is its pid.
  explicit BackgroundProcess(const std::vector<std::string>& argv, bool capture_stdout = false,
                             bool own_process_group = false);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of stdout without its newline; "" at EOF.
  std::string ReadLine();
  // Blocks until it exits; returns the wait status.
  int Wait();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool reaped_ = false;
};

// Runs argv (no shell) under ptrace and kills it with SIGKILL as it enters its first rename(2)
// (rename, renameat or renameat2): the moment a temp-and-rename writer has written its temporary
// file but not put it in place, as a SIGKILL that lands there would. `out`/`err` are read from
// files, so the traced process never blocks on a pipe. exit_code is 128 + 9 when the kill
// happened; *pid is the process's pid (its temporary files carry it). GTEST_SKIP-worthy failures
// (ptrace refused) come back as exit_code -1 with the reason in err.
CommandResult RunCommandKilledAtFirstRename(const std::vector<std::string>& argv, pid_t* pid);

// The pid of a process that has exited and been reaped: no process has it (until the kernel
// reuses it, which takes pid_max more forks).
pid_t ReapedPid();

// Reads a whole file; empty string if it does not exist.
std::string ReadFileOrEmpty(const std::string& path);

// True when perf_event_open works for a software event on this machine; the reason otherwise.
bool PerfEventsAvailable(std::string* why);
// Whether a user-space-only event (perf_event_attr type and config) opens on this process: false
// for a hardware event in a VM without a PMU.
bool PerfEventOpens(uint32_t type, uint64_t config);

}  // namespace nativeprof::testing

#define NP_SKIP_IF_NO_PERF()                                                    \
  do {                                                                          \
    std::string np_why_;                                                        \
    if (!::nativeprof::testing::PerfEventsAvailable(&np_why_)) GTEST_SKIP() << np_why_; \
  } while (0)

#define NP_ASSERT_OK(expr)                                  \
  do {                                                      \
    const ::absl::Status np_st_ = ::nativeprof::AsStatus(expr); \
    ASSERT_TRUE(np_st_.ok()) << np_st_;                     \
  } while (0)
#define NP_EXPECT_OK(expr) EXPECT_TRUE(::nativeprof::AsStatus(expr).ok()) << ::nativeprof::AsStatus(expr)

#define NP_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  NP_ASSERT_OK_AND_ASSIGN_IMPL_(NP_STATUS_CONCAT_(np_test_so_, __LINE__), lhs, expr)
#define NP_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  ASSERT_TRUE(tmp.ok()) << tmp.status();              \
  lhs = std::move(tmp).value()

#include "base/status_macros.h"

#endif  // NATIVEPROF_TESTS_TESTING_TEST_SUPPORT_H_
