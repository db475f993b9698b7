#include "output/counter_report.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "sampler/counter_value.h"
#include "tests/testing/test_support.h"

namespace nativeprof::output {
namespace {

using sampler::CounterValue;
using sampler::MakeCounterValue;
using sampler::ParseEventSpec;
using sampler::UnsupportedCounterValue;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Not;

CounterValue V(const char* name, uint64_t raw, uint64_t enabled = 1'000'000'000,
               uint64_t running = 1'000'000'000) {
  return MakeCounterValue(*ParseEventSpec(name), raw, enabled, running);
}
CounterValue Unsupported(const char* name) {
  return UnsupportedCounterValue(*ParseEventSpec(name), "No such file or directory");
}

const DerivedMetric* FindMetric(const std::vector<DerivedMetric>& metrics, const char* name) {
  for (const DerivedMetric& m : metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// Recorded values of a PMU machine: 0.5 s of CPU in 1 s wall, 1.5e9 cycles, 0.75e9
// instructions, 10% branch misses, 40% cache misses.
std::vector<CounterValue> PmuValues() {
  return {V("task-clock", 500'000'000), V("context-switches", 5000), V("cpu-migrations", 3),
          V("page-faults", 100'000),    V("cycles", 1'500'000'000),  V("instructions", 750'000'000),
          V("branches", 100'000'000),   V("branch-misses", 10'000'000),
          V("cache-references", 1'000'000), V("cache-misses", 400'000)};
}

TEST(CounterMetricsTest, ComputesPerfMetricsFromRecordedValues) {
  std::vector<DerivedMetric> m = ComputeDerivedMetrics(PmuValues(), 1.0);
  ASSERT_NE(FindMetric(m, "cpus_utilized"), nullptr);
  EXPECT_THAT(FindMetric(m, "cpus_utilized")->value, DoubleNear(0.5, 1e-9));
  ASSERT_NE(FindMetric(m, "ipc"), nullptr);
  EXPECT_THAT(FindMetric(m, "ipc")->value, DoubleNear(0.5, 1e-9));
  EXPECT_THAT(FindMetric(m, "ipc")->hint, HasSubstr("stalled"));
  EXPECT_THAT(FindMetric(m, "ghz")->value, DoubleNear(3.0, 1e-9));
  EXPECT_THAT(FindMetric(m, "branch_miss_rate")->value, DoubleNear(10.0, 1e-9));
  EXPECT_THAT(FindMetric(m, "branch_miss_rate")->hint, HasSubstr("hard to predict"));
  EXPECT_THAT(FindMetric(m, "cache_miss_rate")->value, DoubleNear(40.0, 1e-9));
  EXPECT_THAT(FindMetric(m, "cache_miss_rate")->hint, HasSubstr("poor locality"));
  // Rates are per second of task-clock (0.5 s), as perf prints them.
  EXPECT_THAT(FindMetric(m, "page_faults_per_sec")->value, DoubleNear(200'000, 1e-6));
  EXPECT_THAT(FindMetric(m, "page_faults_per_sec")->hint, HasSubstr("fresh memory"));
  EXPECT_THAT(FindMetric(m, "context_switches_per_sec")->value, DoubleNear(10'000, 1e-6));
  EXPECT_THAT(FindMetric(m, "context_switches_per_sec")->hint, HasSubstr("scheduling overhead"));
  EXPECT_THAT(FindMetric(m, "cpus_utilized")->hint, HasSubstr("about one CPU"));
}

TEST(CounterMetricsTest, HintsChangeWithTheNumbers) {
  std::vector<CounterValue> good = {V("task-clock", 2'000'000'000), V("cycles", 1'000'000'000),
                                    V("instructions", 3'000'000'000), V("branches", 1000),
                                    V("branch-misses", 1), V("context-switches", 2)};
  std::vector<DerivedMetric> m = ComputeDerivedMetrics(good, 1.0);
  EXPECT_THAT(FindMetric(m, "ipc")->hint, HasSubstr("high instructions per cycle"));
  EXPECT_THAT(FindMetric(m, "branch_miss_rate")->hint, HasSubstr("well predicted"));
  EXPECT_THAT(FindMetric(m, "context_switches_per_sec")->hint, HasSubstr("negligible"));
  EXPECT_THAT(FindMetric(m, "cpus_utilized")->hint, HasSubstr("parallel on about 2.0 CPUs"));
  std::vector<DerivedMetric> idle = ComputeDerivedMetrics({V("task-clock", 100'000'000)}, 1.0);
  EXPECT_THAT(FindMetric(idle, "cpus_utilized")->hint, HasSubstr("on CPU only 10% of the wall"));
}

TEST(CounterMetricsTest, NoMetricWithoutItsInputs) {
  std::vector<CounterValue> values = {V("task-clock", 1'000'000), Unsupported("cycles"),
                                      V("instructions", 100), V("branches", 10, 100, 0),
                                      V("branch-misses", 1)};
  std::vector<DerivedMetric> m = ComputeDerivedMetrics(values, 0.01);
  EXPECT_EQ(FindMetric(m, "ipc"), nullptr);               // cycles unsupported
  EXPECT_EQ(FindMetric(m, "branch_miss_rate"), nullptr);  // branches not counted
  EXPECT_EQ(FindMetric(m, "ghz"), nullptr);
  EXPECT_NE(FindMetric(m, "cpus_utilized"), nullptr);
}

TEST(CounterTableTest, ShowsNotSupportedAndNotCountedNeverZero) {
  std::vector<CounterValue> values = {V("task-clock", 12'340'000), Unsupported("cycles"),
                                      V("instructions", 0, 1000, 0)};
  std::string table = FormatCounterTable(values, 0.1);
  std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("12.34 msec task-clock"));
  EXPECT_THAT(lines[0], HasSubstr("0.123 CPUs utilized"));
  EXPECT_THAT(lines[1], HasSubstr("<not supported>      cycles"));
  EXPECT_THAT(lines[2], HasSubstr("<not counted>      instructions"));
  EXPECT_THAT(lines[1], Not(HasSubstr(" 0 ")));
  // Values are right-aligned in an 18-character column, like perf stat.
  EXPECT_EQ(lines[0].find("12.34"), 18u - 5u);
  EXPECT_EQ(lines[1].find("<not supported>"), 3u);
}

TEST(CounterTableTest, MultiplexedRowShowsScaledValueAndShare) {
  std::vector<CounterValue> values = {V("cycles", 1'000'000, 4'000'000, 1'000'000)};
  std::string table = FormatCounterTable(values, 0.1);
  EXPECT_THAT(table, HasSubstr("4000000      cycles"));
  EXPECT_THAT(table, HasSubstr("(25.00%)"));
}

TEST(CounterStatsTest, MeanAndRelativeStddevOfTheMeanLikePerf) {
  MeanStddev s = ComputeMeanStddev({1, 2, 3});
  EXPECT_THAT(s.mean, DoubleNear(2, 1e-12));
  EXPECT_THAT(s.stddev_of_mean, DoubleNear(0.5773502691896258, 1e-12));
  EXPECT_THAT(s.rel_pct, DoubleNear(28.867513459481287, 1e-9));
  EXPECT_THAT(ComputeMeanStddev({5}).rel_pct, DoubleNear(0, 1e-12));
  EXPECT_THAT(ComputeMeanStddev({}).mean, DoubleNear(0, 1e-12));
}

TEST(CounterSummaryTest, RepeatedRunsAreAveragedWithVariation) {
  std::vector<CounterRun> runs(3);
  const uint64_t clocks[] = {100'000'000, 200'000'000, 300'000'000};
  for (int i = 0; i < 3; ++i) {
    runs[i].values = {V("task-clock", clocks[i], clocks[i], clocks[i]), Unsupported("cycles")};
    runs[i].elapsed_seconds = 0.4;
  }
  CounterSummary summary = SummarizeRuns({"prog", "arg"}, runs);
  ASSERT_EQ(summary.rows.size(), 2u);
  EXPECT_THAT(summary.rows[0].value.scaled, DoubleNear(200'000'000, 1e-3));
  EXPECT_THAT(summary.rows[0].rel_stddev_pct, DoubleNear(28.8675, 1e-3));
  EXPECT_FALSE(summary.rows[1].value.supported);
  EXPECT_THAT(FindMetric(summary.metrics, "cpus_utilized")->value, DoubleNear(0.5, 1e-9));
  std::string text = FormatCounterSummary(summary);
  EXPECT_THAT(text, HasSubstr("Performance counter stats for 'prog arg' (3 runs):"));
  EXPECT_THAT(text, HasSubstr("( +- 28.87% )"));
  EXPECT_THAT(text, HasSubstr("seconds time elapsed"));
  EXPECT_THAT(text, HasSubstr("Hints:"));
}

TEST(CounterSummaryTest, PerThreadRowsNameTidAndComm) {
  CounterRun run;
  run.values = {V("task-clock", 30'000'000)};
  run.elapsed_seconds = 0.1;
  sampler::ThreadCounters t;
  t.pid = 10;
  t.tid = 11;
  t.comm = "worker-1";
  t.values = {V("task-clock", 20'000'000)};
  run.threads = {t};
  CounterSummary summary = SummarizeRuns({"prog"}, {run});
  std::string text = FormatCounterSummary(summary);
  EXPECT_THAT(text, HasSubstr("10/11"));
  EXPECT_THAT(text, HasSubstr("worker-1"));
  EXPECT_THAT(text, HasSubstr("20.00 msec task-clock"));
  nlohmann::json j = CounterSummaryToJson(summary);
  ASSERT_EQ(j["threads"].size(), 1u);
  EXPECT_EQ(j["threads"][0]["tid"], 11);
  EXPECT_EQ(j["threads"][0]["comm"], "worker-1");
  EXPECT_EQ(j["threads"][0]["counters"][0]["raw"], 20'000'000);
}

TEST(CounterSummaryTest, ThreadNamesAreEscapedInTheTable) {
  CounterRun run;
  run.values = {V("task-clock", 30'000'000)};
  sampler::ThreadCounters t;
  t.pid = 10;
  t.tid = 11;
  t.comm = "\x1b]0;owned\x07";
  t.values = {V("task-clock", 20'000'000)};
  run.threads = {t};
  CounterSummary summary = SummarizeRuns({"prog"}, {run});
  std::string text = FormatCounterSummary(summary);
  EXPECT_THAT(text, HasSubstr("10/11      \\x1b]0;owned\\x07"));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(CounterSummaryToJson(summary)["threads"][0]["comm"], t.comm);  // data stays exact
}

TEST(CounterJsonTest, CarriesRawScaledTimesUnitAndMetrics) {
  std::vector<CounterValue> values = {V("task-clock", 500'000'000),
                                      V("cycles", 1'000'000, 2'000'000, 1'000'000),
                                      Unsupported("instructions")};
  nlohmann::json j = CountersToJson(values, 1.0);
  ASSERT_EQ(j["counters"].size(), 3u);
  EXPECT_EQ(j["counters"][0]["unit"], "msec");
  EXPECT_DOUBLE_EQ(j["counters"][0]["value"].get<double>(), 500.0);
  EXPECT_EQ(j["counters"][1]["raw"], 1'000'000);
  EXPECT_DOUBLE_EQ(j["counters"][1]["scaled"].get<double>(), 2'000'000.0);
  EXPECT_EQ(j["counters"][1]["time_enabled_ns"], 2'000'000);
  EXPECT_EQ(j["counters"][1]["time_running_ns"], 1'000'000);
  EXPECT_DOUBLE_EQ(j["counters"][1]["running_pct"].get<double>(), 50.0);
  EXPECT_EQ(j["counters"][2]["supported"], false);
  EXPECT_TRUE(j["counters"][2]["raw"].is_null());
  bool found = false;
  for (const auto& m : j["metrics"]) {
    if (m["name"] == "cpus_utilized") {
      found = true;
      EXPECT_DOUBLE_EQ(m["value"].get<double>(), 0.5);
      EXPECT_FALSE(m["hint"].get<std::string>().empty());
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace nativeprof::output
