// The Google Benchmark hook (nativeprof/benchmark.h) on bench/gbench_profiled_benchmark.cc,
// built against the shared library: one folded file per benchmark holding only that benchmark's
// function, and the counters in the JSON output's user counters.
#include <filesystem>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::ReadFileOrEmpty;
using ::nativeprof::testing::RunCommand;
using ::nativeprof::testing::TargetPath;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(LibraryGbenchTest, OneFoldedFilePerBenchmarkAndCountersInJson) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir() + "/profiles";
  testing::CommandResult r =
      RunCommand({TargetPath("gbench_profiled"), "--nativeprof_out=" + dir,
                  "--benchmark_format=json", "--benchmark_min_time=0.3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::string a = ReadFileOrEmpty(dir + "/BM_ParseA.folded");
  const std::string b = ReadFileOrEmpty(dir + "/BM_HashB_4096.folded");  // '/' sanitized
  EXPECT_THAT(a, HasSubstr("ParseDigitsA"));
  EXPECT_THAT(a, Not(HasSubstr("HashBytesB")));
  EXPECT_THAT(b, HasSubstr("HashBytesB"));
  EXPECT_THAT(b, Not(HasSubstr("ParseDigitsA")));
  EXPECT_FALSE(std::filesystem::exists(dir + "/BM_HashB/4096.folded"));

  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.contains("benchmarks"));
  ASSERT_EQ(j["benchmarks"].size(), 2u) << r.out;
  for (const auto& bm : j["benchmarks"]) {
    SCOPED_TRACE(bm.dump());
    // Software counters exist on every Linux; per iteration they are small but present.
    ASSERT_TRUE(bm.contains("page_faults"));
    ASSERT_TRUE(bm.contains("ctx_switches"));
    EXPECT_GE(bm["page_faults"].get<double>(), 0.0);
    EXPECT_LT(bm["page_faults"].get<double>(), 1.0);  // no faults in the steady-state loop
    // Hardware ratios appear only where the PMU has them, never as a made-up 0.
    if (bm.contains("IPC")) {
      EXPECT_GT(bm["IPC"].get<double>(), 0.0);
    }
    if (bm.contains("cache_miss_rate")) {
      EXPECT_GE(bm["cache_miss_rate"].get<double>(), 0.0);
    }
  }
}

TEST(LibraryGbenchTest, WithoutOutputDirOnlyCountersAndNoFiles) {
  NP_SKIP_IF_NO_PERF();
  testing::CommandResult r = RunCommand({TargetPath("gbench_profiled"), "--benchmark_filter=ParseA",
                                         "--benchmark_min_time=0.05"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The console table carries the counters as extra columns.
  EXPECT_THAT(r.out, HasSubstr("page_faults="));
  EXPECT_THAT(r.out, HasSubstr("BM_ParseA"));
}

TEST(LibraryGbenchTest, AggregatesOnlyStillWritesOneFilePerBenchmark) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir() + "/profiles";
  testing::CommandResult r = RunCommand(
      {TargetPath("gbench_profiled"), "--nativeprof_out=" + dir, "--benchmark_repetitions=2",
       "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.05"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("BM_ParseA_mean"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/BM_ParseA.folded"), HasSubstr("ParseDigitsA"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/BM_HashB_4096.folded"), HasSubstr("HashBytesB"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/BM_ParseA_mean.folded"));
}

// An output directory that cannot take the profiles is refused before any benchmark runs (it
// used to print one line per benchmark, write nothing and exit 0).
TEST(LibraryGbenchTest, AnOutputDirectoryThatCannotTakeProfilesIsRefusedFirst) {
  NP_SKIP_IF_NO_PERF();
  const std::string file = MakeTempDir() + "/a-file";
  std::ofstream(file) << "x";
  for (const std::string& out : {file, file + "/profiles"}) {
    SCOPED_TRACE(out);
    testing::CommandResult r = RunCommand({TargetPath("gbench_profiled"),
                                           "--nativeprof_out=" + out, "--benchmark_min_time=0.05"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--nativeprof_out"));
    EXPECT_THAT(r.out, Not(HasSubstr("BM_ParseA")));  // no benchmark ran
  }
}

// --nativeprof_counters takes Google Benchmark's boolean forms; anything else is refused.
TEST(LibraryGbenchTest, CountersFlagTakesBooleanForms) {
  NP_SKIP_IF_NO_PERF();
  for (const char* flag : {"--nativeprof_counters", "--nativeprof_counters=true",
                           "--nativeprof_counters=1", "--nativeprof_counters=no"}) {
    SCOPED_TRACE(flag);
    testing::CommandResult r =
        RunCommand({TargetPath("gbench_profiled"), flag, "--benchmark_filter=ParseA",
                    "--benchmark_min_time=0.05"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const bool on = std::string(flag) != "--nativeprof_counters=no";
    EXPECT_EQ(r.out.find("page_faults=") != std::string::npos, on) << r.out;
  }
  testing::CommandResult bad =
      RunCommand({TargetPath("gbench_profiled"), "--nativeprof_counters=maybe"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--nativeprof_counters=true or =false"));
  testing::CommandResult spaced =
      RunCommand({TargetPath("gbench_profiled"), "--nativeprof_out", MakeTempDir()});
  EXPECT_EQ(spaced.exit_code, 1);
  EXPECT_THAT(spaced.err, HasSubstr("--nativeprof_out=DIR"));
}

TEST(LibraryGbenchTest, UnknownFlagsStillRejected) {
  testing::CommandResult r = RunCommand({TargetPath("gbench_profiled"), "--no_such_flag"});
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace nativeprof
