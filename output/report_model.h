// What `nativeprof report` shows, computed once and rendered as text, JSON or markdown
// (text_report.h, report_json.h, report_markdown.h): the filtered profile, its top-N tables by
// function or by module, and the recording's metadata. Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_REPORT_MODEL_H_
#define NATIVEPROF_OUTPUT_REPORT_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "output/frame_modules.h"
#include "output/function_stats.h"
#include "output/name_regex.h"
#include "output/stack_filter.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

enum class ReportKey : uint8_t { kFunction, kModule };

struct ReportSpec {
  size_t top_n = 20;
  const NameRegex* focus = nullptr;  // --focus; null when not given
  const NameRegex* hide = nullptr;   // --hide; null when not given
  ReportKey by = ReportKey::kFunction;
  const FrameModuleMap* frame_modules = nullptr;  // from FILE.json; null or empty when unknown
  // What the counts are: "samples", or "us" for an off-CPU or wall time profile, whose counts
  // are not independent samples (so no confidence intervals are given for them).
  std::string count_unit = "samples";
};

// One table, ranked twice.
struct RankedTable {
  const char* noun = "function";  // "function" or "module": table titles and column header
  uint64_t samples = 0;           // the denominator of every share
  std::vector<FunctionCounts> by_self;   // top N with self > 0, by self, ties by name
  std::vector<FunctionCounts> by_total;  // top N with total > 0, by total, ties by name
};

struct ReportModel {
  FilteredProfile filtered;
  std::string focus;  // the --focus pattern, "" when not given
  std::string hide;   // the --hide pattern, "" when not given
  ReportKey by = ReportKey::kFunction;
  size_t top_n = 20;
  std::string count_unit = "samples";  // ReportSpec::count_unit
  RankedTable functions;
  std::optional<RankedTable> modules;  // with ReportKey::kModule
};

// BuildReport()
//
// Filters `profile` by `spec` (FilterStacks) and ranks its functions and, by module, its modules
// (ModuleKey of each frame's folded name and its frame_modules basename).
ReportModel BuildReport(const symbolize::Profile& profile, const ReportSpec& spec);

// The top `top_n` rows of `table` by self (or total) share; rows with 0 left out; ties keep the
// table's (name) order.
std::vector<FunctionCounts> TopRows(const FunctionTable& table, size_t top_n, bool by_self);

// The module key of every frame of `profile` (ModuleKey), in Profile::frames order.
std::vector<std::string> FrameModuleKeys(const symbolize::Profile& profile,
                                         const FrameModuleMap* frame_modules);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_REPORT_MODEL_H_
