// `nativeprof report --format json`: the report as one JSON document with a fixed schema
// ("nativeprof-report/1", described in docs/report-and-diff.md). Deterministic bytes for the same
// input and options. Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_REPORT_JSON_H_
#define NATIVEPROF_OUTPUT_REPORT_JSON_H_

#include <string>

#include <vector>

#include "nlohmann/json.hpp"
#include "output/alloc_tables.h"
#include "output/off_cpu_tables.h"
#include "output/report_model.h"

namespace nativeprof::output {

// One ranking of an allocation profile's call sites (TopAllocCallSites), of one view.
struct AllocSiteRanking {
  std::string metric;  // "bytes allocated"
  std::string unit;    // "bytes" or "allocations"
  uint64_t total = 0;  // the view's whole figure, the shares' denominator
  std::vector<AllocCallSite> sites;
};

// What a report of a view adds to the document: the blocking call sites of an off-CPU view
// ("blocking_call_sites"), the exact totals and call-site rankings of an allocation view
// ("allocations"). Empty: neither.
struct ReportJsonSections {
  const std::vector<BlockingCallSite>* blocking_sites = nullptr;
  uint64_t blocking_total = 0;  // us
  bool allocations = false;
  std::vector<AllocSiteRanking> alloc_rankings;
};

// RenderReportJson()
//
// The document for `model` read from `input`, with the quality figures and counters of
// `metadata` (FILE.json; pass a null json when there is none) under "recording", then
// `sections`. Indented by 2, ends in '\n'.
std::string RenderReportJson(const ReportModel& model, const std::string& input,
                             const nlohmann::json& metadata,
                             const ReportJsonSections& sections = {});

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_REPORT_JSON_H_
