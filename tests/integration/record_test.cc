// End-to-end tests of `nativeprof record` with frame-pointer stacks: real child programs from
// tests/targets, profiled through the built CLI, checked by the shape of the folded output.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Recorded {
  CommandResult run;
  FoldedProfile profile;
  nlohmann::json metadata;
  std::string folded_path;
};

Recorded Record(const std::vector<std::string>& record_args, const std::vector<std::string>& cmd) {
  Recorded r;
  std::string dir = MakeTempDir();
  r.folded_path = dir + "/out.folded";
  std::vector<std::string> argv = {NativeprofBinary(), "record", "-o", r.folded_path};
  // These tests are about frame-pointer stacks unless they ask otherwise (DWARF has its own).
  if (std::find(record_args.begin(), record_args.end(), "--call-graph") == record_args.end()) {
    argv.insert(argv.end(), {"--call-graph", "fp"});
  }
  argv.insert(argv.end(), record_args.begin(), record_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  r.run = RunCommand(argv);
  r.profile = FoldedProfile::Parse(ReadFileOrEmpty(r.folded_path));
  std::string json = ReadFileOrEmpty(r.folded_path + ".json");
  if (!json.empty()) r.metadata = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  return r;
}

TEST(RecordTest, MeasuresThreeToOneSplitBetweenTwoFunctions) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({"-F", "999"}, {TargetPath("fp_split"), "1500"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_TRUE(r.profile.errors().empty());
  const double heavy = static_cast<double>(r.profile.Self("heavy_function"));
  const double light = static_cast<double>(r.profile.Self("light_function"));
  ASSERT_GT(heavy + light, 500) << "too few samples in the workload:\n" << r.run.err;
  // 3:1 by construction: heavy's share of the pair is 0.75. Sampling error at >= 500 samples is
  // about 0.02; the rest of the margin absorbs a busy machine.
  EXPECT_NEAR(heavy / (heavy + light), 0.75, 0.07);
  // Both run under main -> run_chunks, whose frames must be named too.
  EXPECT_GT(r.profile.WithSequence({"main", "run_chunks", "heavy_function"}), heavy * 0.95);
  // Nearly every sample lands in the two workload functions.
  EXPECT_GT((heavy + light) / static_cast<double>(r.profile.total()), 0.9);
}

// An output directory that is gone when the run ends (removed, or a disk that filled up): the
// profile goes to a directory of its own under $TMPDIR, the message says where, and the exit
// status is the output error's.
TEST(RecordTest, AProfileThatCannotBeWrittenWhereAskedGoesElsewhere) {
  NP_SKIP_IF_NO_PERF();
  const std::string gone = MakeTempDir() + "/gone";
  ASSERT_TRUE(std::filesystem::create_directory(gone));
  const std::string tmpdir = MakeTempDir();
  CommandResult run = RunCommand(
      {"env", "TMPDIR=" + tmpdir, NativeprofBinary(), "record", "--no-counters", "-o",
       gone + "/p.folded", "-o", gone + "/p.svg", "--", "/bin/sh", "-c",
       "rm -r " + gone + " && exec " + TargetPath("fp_split") + " 300"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
  std::vector<std::string> moved;
  for (const auto& entry : std::filesystem::directory_iterator(tmpdir)) {
    moved.push_back(entry.path().string());
  }
  ASSERT_EQ(moved.size(), 1u) << run.err;
  EXPECT_THAT(moved[0], HasSubstr("/nativeprof-output-"));
  for (const char* name : {"/p.folded", "/p.svg", "/p.folded.json"}) {
    EXPECT_THAT(run.err, HasSubstr(absl::StrCat("cannot write ", gone, name)));
    EXPECT_THAT(run.err, HasSubstr(absl::StrCat("wrote it to ", moved[0], name, " instead")));
    EXPECT_TRUE(std::filesystem::exists(moved[0] + name)) << name;
  }
  const FoldedProfile profile = FoldedProfile::Parse(ReadFileOrEmpty(moved[0] + "/p.folded"));
  EXPECT_GT(profile.Self("heavy_function"), 100u) << run.err;
  EXPECT_THAT(run.err, HasSubstr("-> " + moved[0] + "/p.folded"));
  // The message names the file asked for once, not its temporary file as well.
  EXPECT_THAT(run.err, Not(HasSubstr(".tmp.")));
  EXPECT_THAT(run.err, Not(HasSubstr("p.folded: cannot write")));

  // A $TMPDIR that cannot take it is no reason to lose it: it goes under /tmp (it was lost, the
  // message saying /tmp had been tried).
  ASSERT_TRUE(std::filesystem::create_directory(gone));
  CommandResult no_tmpdir = RunCommand(
      {"env", "TMPDIR=" + gone + "/missing", NativeprofBinary(), "record", "--no-counters", "-o",
       gone + "/p.folded", "--", "/bin/sh", "-c",
       "rm -r " + gone + " && exec " + TargetPath("fp_split") + " 100"});
  EXPECT_EQ(no_tmpdir.exit_code, 4) << no_tmpdir.err;
  const size_t at = no_tmpdir.err.find("wrote it to /tmp/nativeprof-output-");
  ASSERT_NE(at, std::string::npos) << no_tmpdir.err;
  const std::string written = no_tmpdir.err.substr(
      at + 12, no_tmpdir.err.find(" instead", at) - at - 12);
  EXPECT_TRUE(std::filesystem::exists(written)) << written;
  std::filesystem::remove_all(written.substr(0, written.rfind('/')));
}

// Two outputs of one name in two directories that are both gone: the fallback directory holds
// both, not the second written over the first, and the run's metadata lists where each went.
TEST(RecordTest, FallbacksOfOneNameDoNotOverwriteEachOther) {
  NP_SKIP_IF_NO_PERF();
  const std::string top = MakeTempDir();
  const std::string tmpdir = MakeTempDir();
  ASSERT_TRUE(std::filesystem::create_directory(top + "/a"));
  ASSERT_TRUE(std::filesystem::create_directory(top + "/b"));
  // TMPDIR with a trailing slash is the one directory, tried once.
  CommandResult run = RunCommand(
      {"env", "TMPDIR=" + tmpdir + "/", NativeprofBinary(), "record", "--no-counters", "-o",
       top + "/a/p.folded", "-o", top + "/b/p.folded", "--", "/bin/sh", "-c",
       "rm -r " + top + "/a " + top + "/b && exec " + TargetPath("fp_split") + " 200"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(tmpdir)) {
    dirs.push_back(entry.path().string());
  }
  ASSERT_EQ(dirs.size(), 1u) << run.err;
  EXPECT_THAT(run.err, HasSubstr(absl::StrCat("cannot write ", top, "/a/p.folded")));
  EXPECT_THAT(run.err, HasSubstr(absl::StrCat("cannot write ", top, "/b/p.folded")));
  for (const char* name : {"/p.folded", "/p.folded.json", "/2-p.folded"}) {
    EXPECT_TRUE(std::filesystem::exists(dirs[0] + name)) << name << "\n" << run.err;
  }
  EXPECT_THAT(run.err, HasSubstr("wrote it to " + dirs[0] + "/2-p.folded instead"));
  const FoldedProfile profile = FoldedProfile::Parse(ReadFileOrEmpty(dirs[0] + "/2-p.folded"));
  EXPECT_GT(profile.Self("heavy_function"), 10u) << run.err;
  EXPECT_THAT(ReadFileOrEmpty(dirs[0] + "/p.folded.json"), HasSubstr(dirs[0] + "/2-p.folded\""));
}

TEST(RecordTest, DefaultsToDwarfCallGraphs) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({"--call-graph", "dwarf"}, {TargetPath("fp_split"), "600"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_TRUE(r.metadata.is_object());
  EXPECT_EQ(r.metadata["call_graph"], "dwarf");
  // And with no --call-graph at all, the default is recorded as dwarf too.
  std::string folded = MakeTempDir() + "/default.folded";
  CommandResult d = RunCommand({NativeprofBinary(), "record", "-o", folded, "--",
                                TargetPath("fp_split"), "300"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  EXPECT_EQ(meta["call_graph"], "dwarf");
  // DWARF unwinds reach the process entry, above main.
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  EXPECT_GT(p.WithSequence({"_start", "__libc_start_main"}), p.total() * 9 / 10) << d.err;
  const double heavy = static_cast<double>(r.profile.Self("heavy_function"));
  const double light = static_cast<double>(r.profile.Self("light_function"));
  ASSERT_GT(heavy + light, 200);
  EXPECT_NEAR(heavy / (heavy + light), 0.75, 0.1);
}

TEST(RecordTest, NamesABinaryDeletedWhileItRuns) {
  NP_SKIP_IF_NO_PERF();
  std::string dir = MakeTempDir();
  std::string copy = dir + "/doomed_split";
  ASSERT_EQ(RunCommand({"cp", TargetPath("fp_split"), copy}).exit_code, 0);
  // The copy deletes itself (through the shell) while it runs, long before symbolization.
  Recorded r = Record({}, {"/bin/sh", "-c", "(sleep 0.3; rm -f " + copy + ") & exec " + copy +
                                                " 1200"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_NE(access(copy.c_str(), F_OK), 0) << "the binary should be gone by now";
  const double heavy = static_cast<double>(r.profile.Self("heavy_function"));
  const double light = static_cast<double>(r.profile.Self("light_function"));
  EXPECT_GT(heavy + light, 200) << r.run.err;
  EXPECT_NEAR(heavy / std::max(1.0, heavy + light), 0.75, 0.1);
}

TEST(RecordTest, CommandNamedInBytesThatAreNotUtf8StillGetsMetadata) {
  NP_SKIP_IF_NO_PERF();
  std::string dir = MakeTempDir();
  // A file name may hold any bytes; JSON strings may not.
  std::string copy = dir + "/split\xff\x1b[1m";
  ASSERT_EQ(RunCommand({"cp", TargetPath("fp_split"), copy}).exit_code, 0);
  Recorded r = Record({}, {copy, "300"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_TRUE(r.metadata.is_object()) << "metadata JSON missing or invalid";
  EXPECT_EQ(r.metadata["command"][0], dir + "/split\xef\xbf\xbd\x1b[1m");
  EXPECT_GT(r.profile.Self("heavy_function"), 0u) << r.run.err;
  EXPECT_THAT(r.run.err, HasSubstr(" samples, 0 lost, "));
}

TEST(RecordTest, LinesAddSourcePositionsToLeafFramesOnly) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({"--lines"}, {TargetPath("fp_split"), "400"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  uint64_t with_position = 0;
  for (const FoldedLine& l : r.profile.lines()) {
    const std::string& leaf = l.frames.back();
    if (leaf.rfind("heavy_function (", 0) == 0) {
      EXPECT_THAT(leaf, ::testing::MatchesRegex(R"(heavy_function \(.*fp_split\.c:[0-9]+\))"));
      with_position += l.count;
    }
    for (size_t i = 1; i + 1 < l.frames.size(); ++i) {
      EXPECT_THAT(l.frames[i], ::testing::Not(HasSubstr(".c:"))) << "only leaf frames get lines";
    }
  }
  EXPECT_GT(with_position, 50u) << r.run.err;
}

TEST(RecordTest, SymbolizesNonPieExecutable) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({}, {TargetPath("fp_split_nopie"), "600"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  const double heavy = static_cast<double>(r.profile.Self("heavy_function"));
  const double light = static_cast<double>(r.profile.Self("light_function"));
  ASSERT_GT(heavy + light, 200) << r.run.err;
  EXPECT_NEAR(heavy / (heavy + light), 0.75, 0.1);
}

TEST(RecordTest, ShowsEveryThreadsFunction) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({}, {TargetPath("fp_threads"), "700"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  const double total = static_cast<double>(r.profile.total());
  ASSERT_GT(total, 600) << r.run.err;
  for (const auto& [comm, function] : std::vector<std::pair<std::string, std::string>>{
           {"alpha", "thread_alpha_work"}, {"beta", "thread_beta_work"},
           {"gamma", "thread_gamma_work"}}) {
    SCOPED_TRACE(function);
    // Equal work per thread: each about a third, all under the thread's own name.
    EXPECT_GT(r.profile.ForThread(comm) / total, 0.2);
    EXPECT_GT(r.profile.Total(function) / total, 0.2);
    EXPECT_EQ(r.profile.WithSequence({comm}), r.profile.ForThread(comm));
  }
  EXPECT_GE(r.metadata.value("threads", 0), 4);
}

TEST(RecordTest, FollowsForkAndExec) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({}, {TargetPath("fp_fork_exec"), TargetPath("fp_split"), "600"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  // The parent's own work under its name, the exec'd child's work under the child's name.
  EXPECT_GT(r.profile.WithSequence({"fp_fork_exec", "__libc_start_call_main", "main",
                                    "parent_function"}) +
                r.profile.WithSequence({"fp_fork_exec", "main", "parent_function"}),
            100u)
      << r.run.err;
  EXPECT_GT(r.profile.WithSequence({"main", "run_chunks", "heavy_function"}), 100u);
  for (const FoldedLine& l : r.profile.lines()) {
    if (l.frames.back() == "heavy_function") EXPECT_EQ(l.frames[0], "fp_split");
  }
  EXPECT_GE(r.metadata.value("processes", 0), 2);
}

// A program run from a memfd has no path on disk: its image is read through the mapping while it
// runs, for the unwinder's CFI and for the names (it was all [unknown], the stacks cut short).
TEST(RecordTest, ProgramRunFromMemfdIsNamed) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({"--call-graph", "dwarf"},
                      {TargetPath("memfd_exec"), TargetPath("fp_split"), "600"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  const double heavy = r.profile.WithSequence({"main", "run_chunks", "heavy_function"});
  const double light = r.profile.WithSequence({"main", "run_chunks", "light_function"});
  EXPECT_GT(heavy, 200) << r.run.err;
  EXPECT_NEAR(heavy / std::max(light, 1.0), 3.0, 1.2);
  EXPECT_GT(heavy + light, 0.8 * static_cast<double>(r.profile.total())) << r.run.err;
}

TEST(RecordTest, OutputIsSortedAndMetadataComplete) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({"-F", "499"}, {TargetPath("fp_split"), "400"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  std::vector<std::string> lines;
  std::ifstream in(r.folded_path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(std::is_sorted(lines.begin(), lines.end()));
  ASSERT_TRUE(r.metadata.is_object()) << "metadata JSON missing or invalid";
  EXPECT_EQ(r.metadata["frequency_hz"], 499);
  EXPECT_EQ(r.metadata["samples"].get<uint64_t>(), r.profile.total());
  EXPECT_EQ(r.metadata["lost"]["records"], 0);
  EXPECT_GT(r.metadata["duration_seconds"].get<double>(), 0.2);
  EXPECT_EQ(r.metadata["weight_unit"], "samples");
  EXPECT_EQ(r.metadata["command"][0], TargetPath("fp_split"));
  // One summary line on stderr names the counts and the output.
  EXPECT_THAT(r.run.err, HasSubstr(" samples, 0 lost, "));
  EXPECT_THAT(r.run.err, HasSubstr("-> " + r.folded_path));
}

TEST(RecordTest, FallsBackFromCyclesToCpuClockAndSaysSo) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({"-e", "cycles"}, {TargetPath("fp_split"), "300"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_TRUE(r.metadata.is_object());
  if (r.metadata["event"] == "cycles") {
    GTEST_SKIP() << "this machine has a PMU; cycles was sampled directly";
  }
  EXPECT_EQ(r.metadata["event"], "cpu-clock");
  EXPECT_EQ(r.metadata["requested_event"], "cycles");
  EXPECT_THAT(r.run.err, HasSubstr("cycles is not supported"));
  EXPECT_THAT(r.run.err, HasSubstr("sampling cpu-clock instead"));
  EXPECT_GT(r.profile.Self("heavy_function"), 50u);
}

// Issue 15: nativeprof raises its own priority (SCHED_FIFO as root) before it starts the command,
// and the command must still run as if nativeprof were not there: SCHED_OTHER, and the nice
// nativeprof was started with.
TEST(RecordTest, TheCommandRunsAtThePriorityNativeprofWasStartedWith) {
  NP_SKIP_IF_NO_PERF();
  const std::string folded = MakeTempDir() + "/prio.folded";
  CommandResult r = RunCommand({"/usr/bin/nice", "-n", "3", NativeprofBinary(), "record", "-o",
                                folded, "--", "/bin/cat", "/proc/self/stat"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Fields after the command name: [0] is field 3, so nice (19) is [16] and policy (41) is [38].
  std::istringstream fields(r.out.substr(r.out.rfind(')') + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
  ASSERT_GT(f.size(), 38u) << r.out;
  EXPECT_EQ(f[16], "3") << "nice";
  EXPECT_EQ(f[38], "0") << "policy: SCHED_OTHER";
  nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  ASSERT_TRUE(meta.is_object());
  if (geteuid() == 0) EXPECT_EQ(meta["scheduling"]["priority"], "SCHED_FIFO 1");
}

TEST(RecordTest, ExitsWithTheTargetsStatus) {
  NP_SKIP_IF_NO_PERF();
  Recorded r = Record({}, {"/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(r.run.exit_code, 7) << r.run.err;
  // Even an instant command yields a complete (possibly tiny) profile and metadata.
  EXPECT_TRUE(r.metadata.is_object());
}

TEST(RecordTest, SigintYieldsCompleteOutput) {
  NP_SKIP_IF_NO_PERF();
  std::string dir = MakeTempDir();
  std::string folded = dir + "/sig.folded";
  BackgroundProcess np({NativeprofBinary(), "record", "-o", folded, "--",
                        TargetPath("fp_until_signal")},
                       /*capture_stdout=*/true);
  ASSERT_GT(np.pid(), 0);
  ASSERT_EQ(np.ReadLine(), "ready");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_EQ(kill(np.pid(), SIGINT), 0);
  const int status = np.Wait();
  ASSERT_TRUE(WIFEXITED(status));
  // The target died of the forwarded SIGINT; nativeprof reports it like a shell would.
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  // CPU time in 1 s of wall time depends on how busy the machine is; any real run gets dozens.
  EXPECT_GT(p.Self("spin_until_signal"), 50u);
  EXPECT_GT(static_cast<double>(p.Self("spin_until_signal")) / static_cast<double>(p.total()), 0.9);
  nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  ASSERT_TRUE(meta.is_object());
  EXPECT_EQ(meta["interrupted"], true);
  EXPECT_EQ(meta["samples"].get<uint64_t>(), p.total());
}

// nativeprof in a process group of its own (as under timeout, or a job of a shell) with a
// command that shuts down cleanly on SIGINT; `send` signals it (its pid is the group's id).
// Returns the command's stdout; expects a clean exit and a profiled shutdown.
std::string RunGracefulCommandAndSignal(const std::function<void(pid_t)>& send) {
  std::string dir = MakeTempDir();
  std::string folded = dir + "/graceful.folded";
  BackgroundProcess np({NativeprofBinary(), "record", "-o", folded, "--",
                        TargetPath("fp_until_signal"), "graceful"},
                       /*capture_stdout=*/true, /*own_process_group=*/true);
  EXPECT_GT(np.pid(), 0);
  EXPECT_EQ(np.ReadLine(), "ready");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  send(np.pid());
  std::string out;
  for (std::string line; !(line = np.ReadLine()).empty();) out += line + "\n";
  const int status = np.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << out;
  EXPECT_THAT(out, HasSubstr("shut down after")) << "the command did not finish its shutdown";
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  EXPECT_GT(p.Self("shut_down"), 0u) << "the shutdown was not profiled";
  return out;
}

// `timeout -s INT` (without --foreground) sends SIGINT to nativeprof and then to its whole
// process group, which holds the command: the group's copy reached nativeprof as a second
// SIGINT, so it stopped waiting and SIGKILLed a command that was shutting down cleanly; and the
// command got two (the group's and the one forwarded).
TEST(RecordTest, TimeoutsSignalThenGroupSignalReachTheCommandOnce) {
  NP_SKIP_IF_NO_PERF();
  const std::string out = RunGracefulCommandAndSignal([](pid_t pid) {
    ASSERT_EQ(kill(pid, SIGINT), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(kill(-pid, SIGINT), 0);
  });
  EXPECT_THAT(out, HasSubstr("after 1 SIGINT"));
}

// Back to back, the kernel usually merges the two into the one nativeprof reads: only the group
// witness tells that the command has it already.
TEST(RecordTest, MergedProcessAndGroupSignalsReachTheCommandOnce) {
  NP_SKIP_IF_NO_PERF();
  const std::string out = RunGracefulCommandAndSignal([](pid_t pid) {
    ASSERT_EQ(kill(pid, SIGINT), 0);
    ASSERT_EQ(kill(-pid, SIGINT), 0);
  });
  EXPECT_THAT(out, HasSubstr("after 1 SIGINT"));
}

TEST(RecordTest, ASignalToTheGroupAloneReachesTheCommandOnce) {
  NP_SKIP_IF_NO_PERF();
  const std::string out =
      RunGracefulCommandAndSignal([](pid_t pid) { ASSERT_EQ(kill(-pid, SIGINT), 0); });
  EXPECT_THAT(out, HasSubstr("after 1 SIGINT"));
}

// nativeprof's process-group witness (GroupSignalWitness::kProcessName).
pid_t GroupSignalWitnessOf(pid_t np) {
  std::istringstream children(
      ReadFileOrEmpty(absl::StrCat("/proc/", np, "/task/", np, "/children")));
  for (pid_t child; children >> child;) {
    if (ReadFileOrEmpty(absl::StrCat("/proc/", child, "/comm")) == "np-sigwitness\n") {
      return child;
    }
  }
  return -1;
}

// `pkill -INT -f 'nativeprof record'` (or killall) signals every process whose command line
// matches: the witness kept nativeprof's, so it was signalled too and nativeprof took the signal
// for a group signal the command already had, forwarding nothing; the command ran on to its end.
TEST(RecordTest, ASignalByNameReachesTheCommandOnce) {
  NP_SKIP_IF_NO_PERF();
  const std::string out = RunGracefulCommandAndSignal([](pid_t pid) {
    const pid_t witness = GroupSignalWitnessOf(pid);
    ASSERT_GT(witness, 0) << "no witness among nativeprof's children";
    // What pkill does with those two: signal each whose command line matches.
    for (const pid_t p : {pid, witness}) {
      std::string cmdline = ReadFileOrEmpty(absl::StrCat("/proc/", p, "/cmdline"));
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      EXPECT_EQ(absl::StrContains(cmdline, "nativeprof"), p == pid) << cmdline;
      if (absl::StrContains(cmdline, "nativeprof record")) ASSERT_EQ(kill(p, SIGINT), 0);
    }
  });
  EXPECT_THAT(out, HasSubstr("after 1 SIGINT"));
}

// On a loaded machine the witness may not run for longer than the 20 ms a signal waits before
// it is forwarded (stopped here until 150 ms): nativeprof asks it and waits for the answer
// rather than forward a group signal the command has already.
TEST(RecordTest, AGroupSignalReachesTheCommandOnceWhenTheWitnessIsLate) {
  NP_SKIP_IF_NO_PERF();
  const std::string out = RunGracefulCommandAndSignal([](pid_t pid) {
    const pid_t witness = GroupSignalWitnessOf(pid);
    ASSERT_GT(witness, 0) << "no witness among nativeprof's children";
    ASSERT_EQ(kill(witness, SIGSTOP), 0);
    ASSERT_EQ(kill(-pid, SIGINT), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    ASSERT_EQ(kill(witness, SIGCONT), 0);
  });
  EXPECT_THAT(out, HasSubstr("after 1 SIGINT"));
}

TEST(RecordTest, ASignalToNativeprofAloneIsForwardedOnce) {
  NP_SKIP_IF_NO_PERF();
  const std::string out =
      RunGracefulCommandAndSignal([](pid_t pid) { ASSERT_EQ(kill(pid, SIGINT), 0); });
  EXPECT_THAT(out, HasSubstr("after 1 SIGINT"));
}

// Fields 3 (the state) on of /proc/PID/stat; empty when there is no such process.
std::vector<std::string> ProcStatFields(pid_t pid) {
  const std::string stat = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/stat"));
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos) return {};
  std::istringstream fields(stat.substr(comm_end + 2));
  return {std::istream_iterator<std::string>(fields), {}};
}

// Field 22, the start time: a pid the kernel gave to another process since has another one.
std::string StartTimeOf(pid_t pid) {
  const std::vector<std::string> f = ProcStatFields(pid);
  return f.size() > 19 ? f[19] : "";
}

// Whether the process that had `pid` when `start_time` was read runs still (a zombie has ended).
bool StillRuns(pid_t pid, const std::string& start_time) {
  const std::vector<std::string> f = ProcStatFields(pid);
  return f.size() > 19 && f[0] != "Z" && f[19] == start_time;
}

// A command that ignores SIGINT is killed after the second signal once the outputs are written,
// and so is every process of its tree: a SIGKILL to the shell alone left its foreground job
// (`sleep`) running under init, and one it had left in the background before.
TEST(RecordTest, ACommandKilledAfterTheSecondSignalLeavesNoProcessBehind) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  const std::string folded = dir + "/ig.folded";
  const std::string script = absl::StrCat(
      "trap '' INT; (sleep 600 >/dev/null 2>&1 & echo $! > ", dir, "/orphan); ",
      "sh -c 'echo $$ > ", dir, "/job; echo ready; exec sleep 600'; echo after");
  BackgroundProcess np({NativeprofBinary(), "record", "--call-graph", "fp", "-o", folded, "--",
                        "/bin/sh", "-c", script},
                       /*capture_stdout=*/true);
  ASSERT_GT(np.pid(), 0);
  ASSERT_EQ(np.ReadLine(), "ready");
  const pid_t orphan = std::stoi(ReadFileOrEmpty(dir + "/orphan"));
  const pid_t job = std::stoi(ReadFileOrEmpty(dir + "/job"));
  const std::string orphan_start = StartTimeOf(orphan), job_start = StartTimeOf(job);
  ASSERT_TRUE(StillRuns(orphan, orphan_start));
  ASSERT_TRUE(StillRuns(job, job_start));
  // SIGTERM for the second: two SIGINTs from one sender within 250 ms of each other, as
  // nativeprof reads them (late, on a loaded machine), count as one signal and its group copy.
  // Read in signal-number order, the SIGINT is the first (forwarded to the shell, which ignores
  // it) and the SIGTERM the second, however late nativeprof reads them.
  ASSERT_EQ(kill(np.pid(), SIGINT), 0);
  ASSERT_EQ(kill(np.pid(), SIGTERM), 0);
  const int status = np.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT) << status;
  nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  EXPECT_TRUE(meta.is_object()) << "the outputs were not written";
  for (const auto& [pid, start] : {std::pair(orphan, orphan_start), std::pair(job, job_start)}) {
    EXPECT_FALSE(StillRuns(pid, start)) << "process " << pid << " outlived nativeprof";
    if (StillRuns(pid, start)) ::kill(pid, SIGKILL);
  }
}

// A command that exits by itself ends the recording, and what it left running in the background
// runs on, as it would have without nativeprof.
TEST(RecordTest, ABackgroundJobOutlivesACommandThatExited) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  CommandResult r = RunCommand(
      {NativeprofBinary(), "record", "--call-graph", "fp", "-o", dir + "/bg.folded", "--",
       "/bin/sh", "-c", absl::StrCat("sleep 600 >/dev/null 2>&1 & echo $! > ", dir, "/bg")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const pid_t background = std::stoi(ReadFileOrEmpty(dir + "/bg"));
  EXPECT_EQ(::kill(background, 0), 0) << "the background job was killed";
  ::kill(background, SIGKILL);
}

// A signal that reaches nativeprof once its command has exited, while the outputs are written,
// does not end it: the command's status is the exit status (nativeprof was killed by the
// signal's default action as it restored its signal mask: 130 for a command that exited 0).
TEST(RecordTest, ASignalAfterTheCommandExitedKeepsItsStatus) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  for (int round = 0; round < 3; ++round) {
    // The shell's background child waits for the shell to exit, then signals nativeprof.
    CommandResult r = RunCommand(
        {NativeprofBinary(), "record", "--no-counters", "-o", dir + "/s.folded", "-o",
         dir + "/s.svg", "-o", dir + "/s.pb.gz", "--", "/bin/sh", "-c",
         absl::StrCat("P=$PPID; S=$$; ", TargetPath("fp_split"), " 100; (while kill -0 $S "
                      "2>/dev/null; do :; done; kill -INT $P) & exit 3")});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_TRUE(std::filesystem::exists(dir + "/s.pb.gz"));
  }
}

// --- bad input ---------------------------------------------------------------------------------

TEST(RecordBadInputTest, MissingCommandPrintsUsage) {
  CommandResult r = RunCommand({NativeprofBinary(), "record"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no command given"));
}

TEST(RecordBadInputTest, CommandNotFound) {
  std::string dir = MakeTempDir();
  CommandResult r = RunCommand(
      {NativeprofBinary(), "record", "-o", dir + "/x.folded", "--", "no-such-program-np"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err,
              HasSubstr("nativeprof: cannot execute 'no-such-program-np': No such file or directory"));
  EXPECT_EQ(access((dir + "/x.folded").c_str(), F_OK), -1) << "no output for a command that never ran";
  // The one line said: no event note (cycles falling back to cpu-clock) before it, as there was
  // when the command was found missing only at exec, after the events were opened.
  EXPECT_EQ(r.err, "nativeprof: cannot execute 'no-such-program-np': No such file or directory\n");
}

// -o /dev/stdout, piped (`| flamegraph.pl`) or redirected to a file: the profile is written into
// the stream after the command's own output, which is kept (the file used to be replaced by a
// rename, and the pipe's "pipe:[N]" link sent the profile to a fallback directory with exit 4),
// and nothing is created beside it in /dev.
TEST(RecordOutputTest, DevStdoutGetsTheProfileAfterTheCommandsOutput) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  const std::string np = NativeprofBinary();
  const std::string program = TargetPath("fp_split");
  for (const bool piped : {true, false}) {
    SCOPED_TRACE(piped ? "piped" : "redirected to a file");
    const std::string out = dir + "/stdout.txt";
    const std::string record =
        absl::StrCat("'", np, "' record --no-counters -o /dev/stdout -- sh -c 'echo command-output; exec \"$0\" 400' '",
                     program, "'");
    CommandResult r = RunCommand(
        {"/bin/sh", "-c", piped ? absl::StrCat(record, " | cat > '", out, "'")
                                : absl::StrCat(record, " > '", out, "'")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string text = ReadFileOrEmpty(out);
    ASSERT_EQ(text.rfind("command-output\n", 0), 0u) << text;
    FoldedProfile p = FoldedProfile::Parse(text.substr(strlen("command-output\n")));
    EXPECT_GT(p.total(), 100u) << text;
    EXPECT_GT(p.Total("heavy_function"), p.total() / 2) << text;
    EXPECT_THAT(r.err, HasSubstr("not written: /dev/stdout.json"));
    EXPECT_THAT(r.err, HasSubstr("-> /dev/stdout"));
    EXPECT_THAT(r.err, Not(HasSubstr("nativeprof-output-")));  // no fallback directory
    EXPECT_FALSE(std::filesystem::exists("/dev/stdout.json"));
  }
}

TEST(RecordBadInputTest, CommandNotExecutable) {
  std::string dir = MakeTempDir();
  std::string file = dir + "/plain.txt";
  std::ofstream(file) << "not a program\n";
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-o", dir + "/x.folded", "--", file});
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_THAT(r.err, HasSubstr("cannot execute"));
  EXPECT_THAT(r.err, HasSubstr("Permission denied"));
  // A directory is said to be one, as a shell says it (it was "Permission denied").
  CommandResult d = RunCommand({NativeprofBinary(), "record", "-o", dir + "/x.folded", "--", dir});
  EXPECT_EQ(d.exit_code, 126);
  EXPECT_THAT(d.err, HasSubstr("cannot execute '" + dir + "': Is a directory"));
}

// An existing file that exec says is missing: the interpreter it names is, and that is said (a
// shell says "bad interpreter"), for a script's #! line and for an ELF's loader (a binary built
// against musl, say).
TEST(RecordBadInputTest, AMissingInterpreterIsNamed) {
  const std::string dir = MakeTempDir();
  const std::string script = dir + "/script.sh";
  std::ofstream(script) << "#!/nonexistent/interp -x\necho hi\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  std::string elf = ReadFileOrEmpty("/bin/true");
  const size_t at = elf.find("/lib64/ld-linux-x86-64.so.2");
  ASSERT_NE(at, std::string::npos) << "/bin/true names no x86-64 loader";
  elf.replace(at, 27, "/lib64/ld-nolnx-x86-64.so.2");
  const std::string binary = dir + "/musl-built";
  std::ofstream(binary, std::ios::binary) << elf;
  std::filesystem::permissions(binary, std::filesystem::perms::owner_all);
  for (const auto& [program, interpreter] :
       {std::pair(script, "/nonexistent/interp"),
        std::pair(binary, "/lib64/ld-nolnx-x86-64.so.2")}) {
    CommandResult r =
        RunCommand({NativeprofBinary(), "record", "-o", dir + "/x.folded", "--", program});
    EXPECT_EQ(r.exit_code, 127) << r.err;
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("cannot execute '", program, "': its interpreter ",
                                              interpreter, " does not exist")));
  }
}

// A binary file the kernel cannot run (ENOEXEC) is said to be one (126), as bash says it;
// execvpe handed it to /bin/sh as a script ('Syntax error: "(" unexpected', exit 2). A text file
// without a #! line is still a script for /bin/sh, as from a shell.
TEST(RecordBadInputTest, ABinaryThisMachineCannotRunIsSaidToBeOne) {
  const std::string dir = MakeTempDir();
  const std::string binary = dir + "/foreign";
  // An ELF header of a class the kernel knows no loader for: 'Exec format error'.
  std::string bytes = std::string("\x7f" "ELF\x03\x01\x01", 7) + std::string(57, '\0');
  bytes += "\n(x)\n";
  std::ofstream(binary, std::ios::binary) << bytes;
  std::filesystem::permissions(binary, std::filesystem::perms::owner_all);
  CommandResult r =
      RunCommand({NativeprofBinary(), "record", "-o", dir + "/x.folded", "--", binary});
  EXPECT_EQ(r.exit_code, 126) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("cannot execute '", binary,
                                            "': Exec format error: a binary file")));
  EXPECT_THAT(r.err, Not(HasSubstr("Syntax error"))) << r.err;

  const std::string script = dir + "/plain";
  std::ofstream(script) << "echo plain-script \"$1\"\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  CommandResult plain =
      RunCommand({NativeprofBinary(), "record", "-o", dir + "/p.folded", "--", script, "ok"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.out, HasSubstr("plain-script ok"));
}

// A zombie has nothing to record: said as such, not as a process that "exited while attaching".
TEST(RecordBadInputTest, AZombieIsNamedAsOne) {
  NP_SKIP_IF_NO_PERF();
  // The shell's child exits at once; the shell, exec'd into sleep, never reaps it.
  BackgroundProcess parent({"/bin/sh", "-c", "true & exec sleep 30"});
  std::string zombie;
  for (int i = 0; i < 300 && zombie.empty(); ++i) {
    ::usleep(10'000);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string stat = ReadFileOrEmpty(entry.path().string() + "/stat");
      if (stat.find(") Z " + std::to_string(parent.pid()) + " ") != std::string::npos) {
        zombie = entry.path().filename().string();
      }
    }
  }
  ASSERT_FALSE(zombie.empty());
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-p", zombie, "--duration", "1",
                                "-o", MakeTempDir() + "/z.folded"});
  ::kill(parent.pid(), SIGKILL);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("process " + zombie + " has exited (a zombie"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(RecordBadInputTest, RejectsBadFrequencies) {
  for (const char* f : {"0", "-5", "abc", "100000000"}) {
    SCOPED_TRACE(f);
    CommandResult r = RunCommand({NativeprofBinary(), "record", "-F", f, "--", "/bin/true"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("-F"));
  }
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-F", "100000000", "--", "/bin/true"});
  EXPECT_THAT(r.err, HasSubstr("perf_event_max_sample_rate"));
}

TEST(RecordBadInputTest, RejectsRingSizeThatIsNotAPowerOfTwo) {
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-m", "3", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("power of two"));
}

TEST(RecordBadInputTest, RejectsUnknownEventListingValidNames) {
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-e", "bogus", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown event 'bogus'"));
  EXPECT_THAT(r.err, HasSubstr("cpu-clock"));
}

TEST(RecordBadInputTest, UnwritableOutputIsFoundBeforeTheTargetRuns) {
  std::string dir = MakeTempDir();
  std::string marker = dir + "/ran";
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-o", "/nonexistent-np-dir/x.folded",
                                "--", "/usr/bin/touch", marker});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_THAT(r.err, HasSubstr("cannot write output '/nonexistent-np-dir/x.folded'"));
  EXPECT_EQ(access(marker.c_str(), F_OK), -1) << "the target must not have run";
  // A bad command line is said before any output is looked at.
  CommandResult usage = RunCommand({NativeprofBinary(), "record", "--duration", "1", "-o",
                                    "/nonexistent-np-dir/x.folded", "--", "/usr/bin/touch", marker});
  EXPECT_EQ(usage.exit_code, 2) << usage.err;
  EXPECT_THAT(usage.err, HasSubstr("--duration applies to -p PID"));
}

// --- against perf ------------------------------------------------------------------------------

// Collapses `perf script` output (blank-line separated samples, frames leaf first) into folded
// lines, as stackcollapse-perf.pl does, keeping only what the comparison needs.
FoldedProfile CollapsePerfScript(const std::string& text) {
  std::string folded;
  std::istringstream in(text);
  std::string line, comm;
  std::vector<std::string> frames;
  auto flush = [&] {
    if (!comm.empty()) {
      std::string stack = comm;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) stack += ";" + *it;
      folded += stack + " 1\n";
    }
    comm.clear();
    frames.clear();
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      flush();
      continue;
    }
    if (line[0] != ' ' && line[0] != '\t') {
      comm = line.substr(0, line.find(' '));
      continue;
    }
    std::istringstream fl(line);
    std::string addr, sym;
    fl >> addr >> sym;
    sym = sym.substr(0, sym.find('+'));
    frames.push_back(sym);
  }
  flush();
  return FoldedProfile::Parse(folded);
}

TEST(RecordVsPerfTest, SplitAgreesWithPerfRecord) {
  NP_SKIP_IF_NO_PERF();
  if (RunCommand({"perf", "--version"}).exit_code != 0) GTEST_SKIP() << "perf is not installed";
  std::string dir = MakeTempDir();
  std::string data = dir + "/perf.data";
  CommandResult pr = RunCommand({"perf", "record", "-q", "-F", "999", "-g", "-e", "cpu-clock", "-o",
                                 data, "--", TargetPath("fp_split"), "1000"});
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  CommandResult ps = RunCommand({"perf", "script", "-i", data, "-F", "comm,ip,sym"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  FoldedProfile perf = CollapsePerfScript(ps.out);
  Recorded ours = Record({"-F", "999"}, {TargetPath("fp_split"), "1000"});
  ASSERT_EQ(ours.run.exit_code, 0) << ours.run.err;

  auto heavy_share = [](const FoldedProfile& p) {
    double h = static_cast<double>(p.Self("heavy_function"));
    double l = static_cast<double>(p.Self("light_function"));
    return h + l == 0 ? 0.0 : h / (h + l);
  };
  ASSERT_GT(perf.total(), 300u);
  EXPECT_NEAR(heavy_share(ours.profile), heavy_share(perf), 0.08);
  // Same frequency, same CPU time: sample counts within a third of each other.
  const double ratio = static_cast<double>(ours.profile.total()) / static_cast<double>(perf.total());
  EXPECT_GT(ratio, 0.67);
  EXPECT_LT(ratio, 1.5);
  // perf names the same call path.
  EXPECT_GT(perf.WithSequence({"main", "run_chunks", "heavy_function"}), 0u);
  EXPECT_GT(ours.profile.WithSequence({"main", "run_chunks", "heavy_function"}), 0u);
}

}  // namespace
}  // namespace nativeprof::testing
