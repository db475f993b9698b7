// `nativeprof report --format markdown`: the report's top-N tables as GitHub-flavoured markdown,
// small enough to paste into an issue or a pull request. Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_REPORT_MARKDOWN_H_
#define NATIVEPROF_OUTPUT_REPORT_MARKDOWN_H_

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "output/report_model.h"

namespace nativeprof::output {

// RenderReportMarkdown()
//
// A summary line (input, samples, filters, and the recording's samples / lost / named-frame share
// from `metadata` when it has them), then the self and total tables of the --by key. Names are
// code spans (MarkdownCode), so '<', '*' and '_' in Rust and C++ names print as they are.
std::string RenderReportMarkdown(const ReportModel& model, const std::string& input,
                                 const nlohmann::json& metadata);

// `text` as a markdown code span: the span's backtick fence is one longer than the longest run of
// backticks in `text`, padded with a space when `text` starts or ends with a backtick
// (CommonMark's rule; a backslash cannot escape a backtick inside a span). With `in_table`, '|'
// becomes "\|" (GFM reads that as a literal pipe in a table cell, also inside code spans; outside
// a table it would show the backslash). Line breaks become spaces.
std::string MarkdownCode(absl::string_view text, bool in_table = true);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_REPORT_MARKDOWN_H_
