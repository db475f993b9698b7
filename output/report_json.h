// `nativeprof report --format json`: the report as one JSON document with a fixed schema
// ("nativeprof-report/1", described in docs/report-and-diff.md). Deterministic bytes for the same
// input and options. Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_REPORT_JSON_H_
#define NATIVEPROF_OUTPUT_REPORT_JSON_H_

#include <string>

#include "nlohmann/json.hpp"
#include "output/report_model.h"

namespace nativeprof::output {

// RenderReportJson()
//
// The document for `model` read from `input`, with the quality figures and counters of
// `metadata` (FILE.json; pass a null json when there is none) under "recording". Indented by 2,
// ends in '\n'.
std::string RenderReportJson(const ReportModel& model, const std::string& input,
                             const nlohmann::json& metadata);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_REPORT_JSON_H_
