// RenderReportJson's sections beside the function tables: an off-CPU view's blocking call sites
// and an allocation view's exact totals and call-site rankings, in the documented order and
// shape, and nothing of either for a plain CPU report.
#include "output/report_json.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::output {
namespace {

ReportModel EmptyModel() { return BuildReport(symbolize::Profile(), ReportSpec()); }

TEST(ReportJsonTest, PlainReportHasNeitherSection) {
  const nlohmann::json doc = nlohmann::json::parse(RenderReportJson(EmptyModel(), "p.folded", {}));
  EXPECT_FALSE(doc.contains("blocking_call_sites"));
  EXPECT_FALSE(doc.contains("allocations"));
}

TEST(ReportJsonTest, BlockingCallSitesWithTheirShareOfTheTime) {
  const std::vector<BlockingCallSite> sites = {{"main > read", 750}, {"worker > futex", 250}};
  ReportJsonSections sections;
  sections.blocking_sites = &sites;
  sections.blocking_total = 1000;
  const nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(RenderReportJson(EmptyModel(), "p.offcpu.folded", {}, sections));
  ASSERT_TRUE(doc.contains("blocking_call_sites"));
  const auto& b = doc["blocking_call_sites"];
  EXPECT_EQ(b["unit"], "us");
  EXPECT_EQ(b["total"], 1000);
  ASSERT_EQ(b["sites"].size(), 2u);
  EXPECT_EQ(b["sites"][0]["name"], "main > read");
  EXPECT_EQ(b["sites"][0]["time"], 750);
  EXPECT_DOUBLE_EQ(b["sites"][0]["share"].get<double>(), 0.75);
  EXPECT_EQ(doc.back(), b);  // the last member
}

// The text and markdown reports show each thread's on-CPU / blocked / waiting split; so does the
// JSON (it had none).
TEST(ReportJsonTest, ThreadsCarryTheirSplitFromTheMetadata) {
  const nlohmann::json meta = nlohmann::json::parse(R"({"off_cpu": {"threads": [
      {"name": "worker", "pid": 7, "tid": 8, "lifetime_ns": 1000, "on_cpu_ns": 600,
       "blocked_ns": 300, "waiting_ns": 100, "ran": true, "switches": 4}]}})");
  const nlohmann::json doc =
      nlohmann::json::parse(RenderReportJson(EmptyModel(), "p.offcpu.folded", meta));
  ASSERT_TRUE(doc.contains("threads"));
  ASSERT_EQ(doc["threads"].size(), 1u);
  const nlohmann::json& t = doc["threads"][0];
  EXPECT_EQ(t["name"], "worker");
  EXPECT_EQ(t["tid"], 8);
  EXPECT_EQ(t["lifetime_ns"], 1000);
  EXPECT_EQ(t["on_cpu_ns"].get<uint64_t>() + t["blocked_ns"].get<uint64_t>() +
                t["waiting_ns"].get<uint64_t>(),
            1000u);
  EXPECT_FALSE(t.contains("switches"));
  EXPECT_FALSE(nlohmann::json::parse(RenderReportJson(EmptyModel(), "p.folded", {}))
                   .contains("threads"));
}

TEST(ReportJsonTest, AllocationsCarryTheExactTotalsAndEveryRanking) {
  const nlohmann::json meta = nlohmann::json::parse(
      R"({"allocations": {"exact": {"allocation_calls": 7, "leaked_bytes": 30}}})");
  ReportJsonSections sections;
  sections.allocations = true;
  sections.alloc_rankings = {{"bytes allocated", "bytes", 400, {{"grow", 300}, {"parse", 100}}},
                             {"allocations", "allocations", 7, {{"parse", 4}}}};
  const nlohmann::json doc = nlohmann::json::parse(
      RenderReportJson(EmptyModel(), "p.alloc.folded", meta, sections));
  ASSERT_TRUE(doc.contains("allocations"));
  const auto& a = doc["allocations"];
  EXPECT_EQ(a["exact"]["allocation_calls"], 7);
  EXPECT_EQ(a["exact"]["leaked_bytes"], 30);
  ASSERT_EQ(a["call_sites"].size(), 2u);
  EXPECT_EQ(a["call_sites"][0]["metric"], "bytes allocated");
  EXPECT_EQ(a["call_sites"][0]["unit"], "bytes");
  EXPECT_EQ(a["call_sites"][0]["total"], 400);
  EXPECT_EQ(a["call_sites"][0]["sites"][0]["name"], "grow");
  EXPECT_EQ(a["call_sites"][0]["sites"][0]["value"], 300);
  EXPECT_DOUBLE_EQ(a["call_sites"][0]["sites"][0]["share"].get<double>(), 0.75);
  EXPECT_EQ(a["call_sites"][1]["sites"][0]["value"], 4);
  EXPECT_FALSE(doc.contains("blocking_call_sites"));
}

}  // namespace
}  // namespace nativeprof::output
