// report's confidence intervals and diff's significance test, checked against direct binomial
// computations and synthetic profiles with known changes.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "output/diff_report.h"
#include "output/folded_reader.h"
#include "output/function_stats.h"
#include "output/stack_filter.h"
#include "output/text_report.h"
#include "tests/testing/test_support.h"

namespace nativeprof::output {
namespace {

using ::testing::HasSubstr;

double BinomialPmf(uint64_t k, uint64_t n, double p) {
  return std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) +
                  k * std::log(p) + (n - k) * std::log1p(-p));
}

// P(X <= k) for X ~ Binomial(n, p), by summing the pmf.
double BinomialCdf(uint64_t k, uint64_t n, double p) {
  double s = 0;
  for (uint64_t i = 0; i <= k; ++i) s += BinomialPmf(i, n, p);
  return std::min(1.0, s);
}

// The exact (Clopper-Pearson) upper bound: the p with P(X <= k) = alpha/2, by bisection.
double ExactUpper(uint64_t k, uint64_t n, double alpha) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (BinomialCdf(k, n, mid) > alpha / 2 ? lo : hi) = mid;
  }
  return lo;
}

TEST(StatsTest, NormalQuantiles) {
  EXPECT_NEAR(TwoSidedZ(0.95), 1.959964, 1e-5);
  EXPECT_NEAR(TwoSidedZ(0.99), 2.575829, 1e-5);
  EXPECT_NEAR(TwoSidedZ(0.999), 3.290527, 1e-5);
}

TEST(StatsTest, WilsonIntervalMatchesKnownValues) {
  // 2 of 100: Wilson 95% interval is [0.55%, 7.00%].
  const Interval ci = WilsonInterval(2, 100, 0.95);
  EXPECT_NEAR(ci.low, 0.0055, 0.0001);
  EXPECT_NEAR(ci.high, 0.0700, 0.0001);
  // Close to the exact binomial bound where the normal approximation is good.
  EXPECT_NEAR(WilsonInterval(300, 1000, 0.95).high, ExactUpper(300, 1000, 0.05), 0.002);
  const Interval none = WilsonInterval(0, 0, 0.95);
  EXPECT_EQ(none.low, 0);
  EXPECT_EQ(none.high, 1);
}

TEST(StatsTest, WilsonIntervalCoversTheTrueShareAboutNinetyFivePercent) {
  // Coverage computed exactly: sum the binomial probability of every k whose interval contains p.
  for (uint64_t n : {50u, 200u, 1000u}) {
    for (double p : {0.02, 0.1, 0.3, 0.5}) {
      double coverage = 0;
      for (uint64_t k = 0; k <= n; ++k) {
        const Interval ci = WilsonInterval(k, n, 0.95);
        if (ci.low <= p && p <= ci.high) coverage += BinomialPmf(k, n, p);
      }
      EXPECT_GT(coverage, 0.92) << "n=" << n << " p=" << p;
      EXPECT_LT(coverage, 0.985) << "n=" << n << " p=" << p;
    }
  }
}

TEST(StatsTest, NoiseMarksFewSamples) {
  EXPECT_TRUE(IsNoise(2, 100));
  EXPECT_TRUE(IsNoise(0, 100));
  EXPECT_FALSE(IsNoise(40, 100));
  EXPECT_FALSE(IsNoise(200, 100000));
}

TEST(ReportTest, TableShowsIntervalsAndNoise) {
  NP_ASSERT_OK_AND_ASSIGN(symbolize::Profile p,
                          ParseFolded("app;main;hot 60\napp;main;warm 38\napp;main;rare 2\n"));
  const std::string text = RenderTopFunctions(p, 10);
  EXPECT_THAT(text, HasSubstr("Top 3 functions by self share (of 100 samples)"));
  // hot: 60/100, Wilson 95% [50.20%, 69.06%].
  EXPECT_THAT(text, HasSubstr("  60.00%  50.20-69.06%              60    60.00%  hot\n"));
  EXPECT_THAT(text, HasSubstr("   2.00%  0.55-7.00%                 2     2.00%  rare  [noise]\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("hot  [noise]")));
  EXPECT_THAT(text, HasSubstr(" 100.00%  96.30-100.00%            100     0.00%  main\n"));
}

TEST(ReportTest, TotalCountsRecursionOnce) {
  NP_ASSERT_OK_AND_ASSIGN(symbolize::Profile p, ParseFolded("t;f;f;f 3\nt;g 1\n"));
  FunctionTable table = CountFunctions(p);
  ASSERT_EQ(table.functions.size(), 2u);
  EXPECT_EQ(table.functions[0].name, "f");
  EXPECT_EQ(table.functions[0].total, 3u);
  EXPECT_EQ(table.functions[0].self, 3u);
  EXPECT_EQ(table.samples, 4u);
}

TEST(ReportTest, CallTreeRespectsDepth) {
  NP_ASSERT_OK_AND_ASSIGN(symbolize::Profile p,
                          ParseFolded("app;main;a;deep 6\napp;main;b 4\n"));
  const std::string tree = RenderCallTree(p, 2, 0.5);
  EXPECT_THAT(tree, HasSubstr("100.00%    0.00%  app\n"));
  EXPECT_THAT(tree, HasSubstr(" 60.00%    0.00%      a\n"));
  EXPECT_THAT(tree, HasSubstr(" 40.00%   40.00%      b\n"));
  EXPECT_THAT(tree, ::testing::Not(HasSubstr("deep")));
  EXPECT_THAT(tree, HasSubstr("Call tree (10 samples;"));
  // A time or byte view's tree is in its own unit, after filtering too (it said "samples").
  p.count_unit = "us";
  EXPECT_THAT(RenderCallTree(FilterStacks(p, {}).profile, 2, 0.5), HasSubstr("Call tree (10 us;"));
}

TEST(ReportTest, CountersInAllShapes) {
  const nlohmann::json obj = nlohmann::json::parse(
      R"({"counters": {"task-clock": {"value": 1.5, "unit": "msec"}, "page-faults": 42}})");
  const std::string text = RenderCounters(obj);
  EXPECT_THAT(text, HasSubstr("page-faults"));
  EXPECT_THAT(text, HasSubstr("42"));
  EXPECT_THAT(text, HasSubstr("msec"));
  const nlohmann::json arr = nlohmann::json::parse(
      R"({"counters": [{"name": "context-switches", "value": 7}]})");
  EXPECT_THAT(RenderCounters(arr), HasSubstr("context-switches"));
  EXPECT_EQ(RenderCounters(nlohmann::json::parse(R"({"x": 1})")), "");
  // The shape `record` writes beside a profile.
  const nlohmann::json rec = nlohmann::json::parse(R"({"counters": {"elapsed_seconds": 1.0,
      "counters": [{"event": "task-clock", "unit": "msec", "supported": true, "value": 584.5},
                   {"event": "cycles", "unit": "", "supported": false, "value": null}],
      "metrics": [{"name": "cpus_utilized", "event": "task-clock", "value": 0.5845,
                   "unit": "CPUs utilized"}]}})");
  const std::string rec_text = RenderCounters(rec);
  EXPECT_THAT(rec_text, HasSubstr("task-clock"));
  EXPECT_THAT(rec_text, HasSubstr("584.5 msec"));
  EXPECT_THAT(rec_text, HasSubstr("<not supported>"));
  EXPECT_THAT(rec_text, HasSubstr("0.5845 CPUs utilized"));
  EXPECT_THAT(rec_text, ::testing::Not(HasSubstr("elapsed_seconds")));
}

TEST(ReportTest, NestedCounterValuesAreSummarisedNotDumped) {
  // The JSON beside a profile is any file: nesting as deep as the parser accepts must not make
  // the report recurse as deep.
  const std::string deep(200000, '[');
  const nlohmann::json meta = nlohmann::json::parse(
      R"({"counters": {"deep": )" + deep + std::string(200000, ']') +
      R"(, "obj": {"a": 1, "b": [2]}, "flag": true}})");
  ASSERT_FALSE(meta.is_discarded());
  const std::string text = RenderCounters(meta);
  EXPECT_THAT(text, HasSubstr("<array of 1>"));
  EXPECT_THAT(text, HasSubstr("<object of 2 members>"));
  EXPECT_THAT(text, HasSubstr("true"));
  EXPECT_LT(text.size(), 400u);
}

// A profile whose function counts are the expected counts n * share plus bounded noise: up to one
// standard deviation of the binomial count, in a fixed pseudo-random direction per function.
// Bounded noise keeps the test deterministic without depending on a lucky seed: with truly
// random counts and ~50 functions tested at the 1% level, about one in three runs would see a
// noise function cross the line, which is the test working as designed, not a bug.
std::string SyntheticFolded(const std::vector<double>& shares, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (size_t i = 0; i < shares.size(); ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2 - 1;  // [-1, 1)
    const double sd = std::sqrt(n * shares[i] * (1 - shares[i]));
    const auto count = static_cast<uint64_t>(std::llround(n * shares[i] + u * sd));
    absl::StrAppend(&text, "app;main;", i == 0 ? std::string("hot") : absl::StrCat("f", i), " ",
                    count, "\n");
  }
  return text;
}

TEST(DiffTest, OnlyTheChangedFunctionIsSignificant) {
  // BEFORE: hot 2%, 49 other functions 2% each. AFTER: hot 4%, the others share the rest
  // equally (each 1.96%: a shift far inside sampling noise). AFTER also has 1.5x the samples,
  // so raw counts of every function grow; only shares may be compared.
  std::vector<double> before(50, 0.02), after(50, 0.96 / 49);
  after[0] = 0.04;
  NP_ASSERT_OK_AND_ASSIGN(symbolize::Profile b, ParseFolded(SyntheticFolded(before, 10000, 1)));
  NP_ASSERT_OK_AND_ASSIGN(symbolize::Profile a, ParseFolded(SyntheticFolded(after, 15000, 2)));
  const DiffResult diff = DiffProfiles(b, a, 0.99);
  EXPECT_NEAR(static_cast<double>(diff.before_samples), 10000, 300);
  EXPECT_NEAR(static_cast<double>(diff.after_samples), 15000, 300);
  ASSERT_FALSE(diff.changes.empty());
  EXPECT_EQ(diff.changes[0].name, "hot");  // largest change first
  EXPECT_TRUE(diff.changes[0].self_significant);
  EXPECT_TRUE(diff.changes[0].total_significant);
  EXPECT_NEAR(diff.changes[0].self_delta, 0.02, 0.006);
  int significant = 0;
  for (const FunctionChange& c : diff.changes) {
    if (c.significant()) {
      ++significant;
      EXPECT_EQ(c.name, "hot");
    }
  }
  EXPECT_EQ(significant, 1);
  const std::string table = RenderDiffTable(diff, 10);
  EXPECT_THAT(table, HasSubstr("1 of 51 functions changed significantly"));
  EXPECT_THAT(table, ::testing::ContainsRegex("\\+2\\.[0-9]+ \\*.*hot"));
}

TEST(DiffTest, ZTestMatchesHandComputation) {
  // 100/1000 vs 150/1000: pooled 0.125, se = sqrt(.125 * .875 * 2 / 1000) = 0.014790.
  EXPECT_NEAR(TwoProportionZ(100, 1000, 150, 1000), 0.05 / 0.0147902, 1e-4);
  EXPECT_EQ(TwoProportionZ(0, 0, 1, 10), 0);
  EXPECT_EQ(TwoProportionZ(10, 10, 20, 20), 0);  // both 100%: no variance
}

}  // namespace
}  // namespace nativeprof::output
