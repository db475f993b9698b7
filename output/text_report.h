// The terminal text of `nativeprof report`: top functions by self and total share with 95% Wilson
// intervals (and a noise marker), a depth-limited call tree, and the counter summary from the
// metadata JSON written beside a recording. Pure functions returning text; any thread.
#ifndef NATIVEPROF_OUTPUT_TEXT_REPORT_H_
#define NATIVEPROF_OUTPUT_TEXT_REPORT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

#include "nlohmann/json.hpp"
#include "output/report_model.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// Two tables, top `top_n` functions by self share and by total share; each share with its 95%
// Wilson interval; rows whose interval is too wide (IsNoise) end in "[noise]", explained below the
// table. Ties break by name, so the text is deterministic.
std::string RenderTopFunctions(const symbolize::Profile& profile, size_t top_n);

// The same two tables for a built report: by function, or by module when model.modules is set;
// with --focus the titles say "(of N samples through /RE/, P% of all)", with --hide a line above
// the tables names the pattern. "no samples" when nothing is left.
std::string RenderReportTables(const ReportModel& model);

// The merged call tree (thread names at the first level) to `depth` frame levels below the
// thread, children by decreasing total share; callees under `min_percent` of all samples are
// summarised in one "... N more" line.
std::string RenderCallTree(const symbolize::Profile& profile, int depth, double min_percent);

// The "counters" member of a metadata JSON, one line per counter: name, value and unit when
// present. Accepts what `record` writes ({"counters": [{"event", "value", "unit", ...}],
// "metrics": [...]}, metrics printed after the counters), {"name": number},
// {"name": {"value": v, "unit": u}} and [{"name": n, "value": v, "unit": u}]. A null value prints
// as "<not counted>". Empty string when there is no "counters" member.
std::string RenderCounters(const nlohmann::json& metadata);

// 12345 -> "12,345".
std::string WithThousands(uint64_t value);

// "1 thread", "3 threads": `n` with the noun that agrees with it.
std::string Plural(uint64_t n, const char* one, const char* many);
// "Top 3 call sites", "Top call site": the heading of a table of the `n` largest.
std::string TopHeading(uint64_t n, absl::string_view one, absl::string_view many);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_TEXT_REPORT_H_
