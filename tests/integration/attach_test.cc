// End-to-end tests of `nativeprof record -p PID`: attaching to running processes, stopping on
// --duration / SIGINT / target exit, and leaving the target untouched afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

extern char** environ;

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;

// A process started in the background, killed and reaped when the test ends.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv, bool capture_stdout = false) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (capture_stdout) {
      int p[2];
      if (pipe(p) == 0) {
        posix_spawn_file_actions_adddup2(&actions, p[1], 1);
        posix_spawn_file_actions_addclose(&actions, p[0]);
        out_fd_ = p[0];
        write_end_ = p[1];
      }
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    if (write_end_ >= 0) close(write_end_);
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
  }
  pid_t pid() const { return pid_; }
  std::string ReadLine() {
    std::string line;
    char c;
    while (out_fd_ >= 0 && read(out_fd_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int write_end_ = -1;
  bool reaped_ = false;
};

std::string Ask(int port, const std::string& request) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    (void)!write(s, request.data(), request.size());
    char buf[64];
    ssize_t n;
    while ((n = read(s, buf, sizeof(buf))) > 0) reply.append(buf, static_cast<size_t>(n));
  }
  close(s);
  return reply;
}

TEST(AttachTest, SamplesEveryThreadOfARunningServerAndLeavesItServing) {
  NP_SKIP_IF_NO_PERF();
  Background server({TargetPath("attach_server")}, /*capture_stdout=*/true);
  ASSERT_GT(server.pid(), 0);
  std::string port_line = server.ReadLine();
  ASSERT_THAT(port_line, HasSubstr("PORT "));
  const int port = std::stoi(port_line.substr(5));
  ASSERT_EQ(Ask(port, "ping"), "pong\n");
  const double rate_before = std::stod(Ask(port, "rate"));
  ASSERT_GT(rate_before, 0);

  std::string dir = MakeTempDir();
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    std::string folded = dir + "/attach" + std::to_string(round) + ".folded";
    CommandResult r = RunCommand({NativeprofBinary(), "record", "-p", std::to_string(server.pid()),
                                  "--duration", "1", "-o", folded});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
    ASSERT_GT(p.total(), 100u) << r.err;
    // Each worker thread's hot function, under the thread's own name, about half each.
    EXPECT_GT(p.WithSequence({"worker-alpha"}), p.total() / 5);
    EXPECT_GT(p.WithSequence({"worker-beta"}), p.total() / 5);
    EXPECT_GT(p.Self("server_worker_alpha") + p.Self("server_worker_beta"), p.total() * 8 / 10);
    EXPECT_GT(p.WithSequence({"main", "server_worker_alpha"}) +
                  p.WithSequence({"Alpha", "server_worker_alpha"}),
              0u)
        << "frames above the hot function are named";
    nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
    ASSERT_TRUE(meta.is_object());
    EXPECT_GE(meta["threads"].get<int>(), 3);
    // Detached: the server keeps answering.
    EXPECT_EQ(Ask(port, "ping"), "pong\n");
  }
  EXPECT_EQ(kill(server.pid(), 0), 0) << "the server must still be running";
  // And at full speed: the workers' rate after detaching is not below half the rate before
  // (a generous bound: the machine is shared, but a leftover event would not slow it this much
  // either - the point is that nothing keeps sampling or stops the process).
  const double rate_after = std::stod(Ask(port, "rate"));
  EXPECT_GT(rate_after, rate_before * 0.5);
}

TEST(AttachTest, StopsWhenTheTargetExitsAndWritesWhatWasSampled) {
  NP_SKIP_IF_NO_PERF();
  Background target({TargetPath("fp_threads"), "600"});
  ASSERT_GT(target.pid(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::string folded = MakeTempDir() + "/exit.folded";
  CommandResult r =
      RunCommand({NativeprofBinary(), "record", "-p", std::to_string(target.pid()), "-o", folded});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  EXPECT_GT(p.Total("thread_alpha_work"), 0u) << r.err;
  EXPECT_GT(p.Total("thread_gamma_work"), 0u);
}

TEST(AttachTest, SigintStopsProfilingButNotTheTarget) {
  NP_SKIP_IF_NO_PERF();
  Background target({TargetPath("fp_until_signal")}, /*capture_stdout=*/true);
  ASSERT_EQ(target.ReadLine(), "ready");
  std::string folded = MakeTempDir() + "/int.folded";
  Background profiler({NativeprofBinary(), "record", "-p", std::to_string(target.pid()), "-o",
                       folded});
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_EQ(kill(profiler.pid(), SIGINT), 0);
  int status = profiler.Wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(kill(target.pid(), 0), 0) << "SIGINT must not be forwarded to an attached target";
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  EXPECT_GT(p.Self("spin_until_signal"), 20u);
}

TEST(AttachBadInputTest, NoSuchProcess) {
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-p", "2147480000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nativeprof: no process with PID 2147480000"));
}

TEST(AttachBadInputTest, CommandAndPidTogetherIsAnError) {
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-p", "1", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("either a command or -p PID"));
}

}  // namespace
}  // namespace nativeprof::testing
