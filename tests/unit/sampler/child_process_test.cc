#include "sampler/child_process.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

using ::testing::HasSubstr;

TEST(ChildProcessTest, MissingProgramIsNotFound) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({"nativeprof-no-such-program-x"});
  ASSERT_TRUE(child.ok()) << child.status();
  absl::Status st = child->Release();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_EQ(std::string(st.message()),
            "cannot execute 'nativeprof-no-such-program-x': No such file or directory");
  // The child has exited with 127 and was reaped.
  std::optional<int> status = child->TryWait();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(ExitCodeFromWaitStatus(*status), 127);
}

TEST(ChildProcessTest, NonExecutableFileIsPermissionDenied) {
  const std::string path = testing::MakeTempDir() + "/not-executable";
  {
    std::ofstream f(path);
    f << "#!/bin/sh\nexit 0\n";
  }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({path});
  ASSERT_TRUE(child.ok()) << child.status();
  absl::Status st = child->Release();
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("cannot execute '" + path + "'"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("Permission denied"));
}

// FindProgram answers as the child's exec would, before anything is spawned.
TEST(FindProgramTest, AnswersAsExecvp) {
  const std::string dir = testing::MakeTempDir();
  const std::string script = dir + "/run-me";
  const std::string plain = dir + "/plain";
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  std::ofstream(plain) << "text\n";
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(plain.c_str(), 0644), 0);
  EXPECT_EQ(FindProgram(script).value_or(""), script);
  EXPECT_EQ(FindProgram("sh").status().code(), absl::StatusCode::kOk);
  absl::StatusOr<std::string> missing = FindProgram("nativeprof-no-such-program-x");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(missing.status().message()),
            "cannot execute 'nativeprof-no-such-program-x': No such file or directory");
  EXPECT_EQ(FindProgram(dir + "/nothing").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FindProgram(plain).status().code(), absl::StatusCode::kPermissionDenied);
  // A directory named with a path is said to be one, as a shell says it (execve's EACCES).
  EXPECT_THAT(std::string(FindProgram(dir).status().message()),
              ::testing::HasSubstr("Is a directory"));
  // The child's PATH and working directory, not the profiler's.
  SpawnOptions in_dir;
  in_dir.set_environment = {{"PATH", dir}};
  EXPECT_EQ(FindProgram("run-me", in_dir).value_or(""), dir + "/run-me");
  EXPECT_EQ(FindProgram("plain", in_dir).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(FindProgram("sh", in_dir).status().code(), absl::StatusCode::kNotFound);
  SpawnOptions from_dir;
  from_dir.working_directory = dir;
  EXPECT_EQ(FindProgram("./run-me", from_dir).value_or(""), dir + "/./run-me");
  EXPECT_EQ(FindProgram("./run-me").status().code(), absl::StatusCode::kNotFound);
}

TEST(ChildProcessTest, EmptyArgvIsInvalidArgument) {
  EXPECT_EQ(ChildProcess::Spawn({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChildProcessTest, ExitStatusComesBack) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({"/bin/sh", "-c", "exit 3"});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->Release().ok());
  EXPECT_EQ(ExitCodeFromWaitStatus(child->Wait()), 3);
  EXPECT_EQ(ExitCodeFromWaitStatus(child->Wait()), 3) << "second Wait returns the cached status";
  EXPECT_FALSE(child->Release().ok()) << "released twice";
}

TEST(ChildProcessTest, SignalDeathIs128PlusSignal) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({"/bin/sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->Release().ok());
  EXPECT_EQ(ExitCodeFromWaitStatus(child->Wait()), 128 + SIGTERM);
}

TEST(ChildProcessTest, SignalReachesTheChild) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({"/bin/sleep", "30"});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->Release().ok());
  EXPECT_FALSE(child->TryWait().has_value());
  child->Signal(SIGKILL);
  EXPECT_EQ(ExitCodeFromWaitStatus(child->Wait()), 128 + SIGKILL);
}

// Field 19 of /proc/PID/stat.
int NiceOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // from field 3
  std::string field;
  for (int i = 3; i <= 19 && fields >> field; ++i) {
  }
  return std::stoi(field);
}

TEST(ChildProcessTest, ChildSetsTheNiceItWasAskedFor) {
  // What a boosted profiler passes: the nice it was started with, which SCHED_RESET_ON_FORK
  // would otherwise reset to 0 in the child. A higher nice is always permitted.
  SpawnOptions options;
  options.nice = 7;
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({"/bin/sleep", "30"}, options);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->Release().ok());  // returns after the exec: the nice was set before it
  EXPECT_EQ(NiceOf(child->pid()), 7);
  child->Signal(SIGKILL);
  child->Wait();
}

TEST(ChildProcessTest, ExitCodeFromWaitStatusEncodings) {
  EXPECT_EQ(ExitCodeFromWaitStatus(0), 0);
  EXPECT_EQ(ExitCodeFromWaitStatus(42 << 8), 42);
  EXPECT_EQ(ExitCodeFromWaitStatus(SIGSEGV), 128 + SIGSEGV);
  EXPECT_EQ(ExitCodeFromWaitStatus(SIGINT | 0x80), 128 + SIGINT);  // with core dump bit
}

TEST(ChildProcessTest, DestructorKillsAnUnreleasedChild) {
  pid_t pid;
  {
    absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({"/bin/true"});
    ASSERT_TRUE(child.ok()) << child.status();
    pid = child->pid();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, 0), 0) << "child should be alive, waiting for Release";
  }
  // Killed and reaped: the pid no longer exists (not even as a zombie).
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

// The text of `path` once a writer has put a line in it (polled: the writer is a shell).
std::string AwaitLine(const std::string& path) {
  for (int i = 0; i < 6000; ++i) {
    const std::string text = testing::ReadFileOrEmpty(path);
    if (!text.empty() && text.back() == '\n') return text;
    ::usleep(10'000);
  }
  return "";
}

// A shell's foreground job survived a SIGKILL to the shell alone; a job it left in the
// background, orphaned, went on under init.
TEST(ChildProcessTest, DestructorKillsTheTreeOfAChildThatAdoptsOrphans) {
  const std::string dir = testing::MakeTempDir();
  SpawnOptions options;
  options.adopt_orphans = true;
  pid_t orphan = 0, job = 0;
  {
    absl::StatusOr<ChildProcess> child = ChildProcess::Spawn(
        {"/bin/sh", "-c",
         "(sleep 600 & echo $! > " + dir + "/orphan); sh -c 'echo $$ > " + dir +
             "/job; exec sleep 600'"},
        options);
    ASSERT_TRUE(child.ok()) << child.status();
    ASSERT_TRUE(child->Release().ok());
    orphan = std::stoi(AwaitLine(dir + "/orphan"));
    job = std::stoi(AwaitLine(dir + "/job"));
    ASSERT_EQ(::kill(orphan, 0), 0);
    ASSERT_EQ(::kill(job, 0), 0);
  }
  // Killed and reaped here, as this process adopted them: not even zombies are left.
  for (pid_t pid : {orphan, job}) {
    errno = 0;
    EXPECT_EQ(::kill(pid, 0), -1) << pid;
    EXPECT_EQ(errno, ESRCH) << pid;
    if (errno != ESRCH) ::kill(pid, SIGKILL);
  }
}

TEST(ChildProcessTest, ReapOrphansLeavesNoZombie) {
  const std::string dir = testing::MakeTempDir();
  SpawnOptions options;
  options.adopt_orphans = true;
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn(
      {"/bin/sh", "-c", "(true & echo $! > " + dir + "/orphan); exec sleep 600"}, options);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->Release().ok());
  const pid_t orphan = std::stoi(AwaitLine(dir + "/orphan"));
  // Reaped only once it exited, as an orphan of this process, so the first call may see it run.
  bool gone = false;
  for (int i = 0; i < 6000 && !gone; ++i) {
    child->ReapOrphans();
    gone = ::kill(orphan, 0) != 0 && errno == ESRCH;
    if (!gone) ::usleep(10'000);
  }
  EXPECT_TRUE(gone) << "orphan " << orphan << " left a zombie";
  EXPECT_FALSE(child->TryWait().has_value()) << "the command is not reaped as an orphan";
}

TEST(ChildProcessTest, MovedFromChildDoesNotKill) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({"/bin/sh", "-c", "exit 5"});
  ASSERT_TRUE(child.ok()) << child.status();
  ChildProcess moved = std::move(*child);
  { ChildProcess sink = std::move(*child); }  // destroying the empty husk must not kill
  ASSERT_TRUE(moved.Release().ok());
  EXPECT_EQ(ExitCodeFromWaitStatus(moved.Wait()), 5);
}

}  // namespace
}  // namespace nativeprof::sampler
