// Command line of `nativeprof report`: parsing and validation (numbers, --by, --format, and the
// --focus / --hide regular expressions compiled here, so a bad one is rejected before the
// profile is read). Main thread.
#ifndef NATIVEPROF_TOOLS_REPORT_OPTIONS_H_
#define NATIVEPROF_TOOLS_REPORT_OPTIONS_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "output/name_regex.h"
#include "output/report_model.h"

namespace nativeprof::tools {

enum class ReportFormat { kText, kJson, kMarkdown };

struct ReportOptions {
  std::string path = "nativeprof.folded";
  size_t top_n = 20;
  bool tree = false;  // text only
  int depth = 8;
  double min_percent = 0.5;
  std::optional<output::NameRegex> focus;
  std::optional<output::NameRegex> hide;
  output::ReportKey by = output::ReportKey::kFunction;
  ReportFormat format = ReportFormat::kText;
};

// Parses argv (argv[0] = "report"). On `--help` returns kCancelled after printing usage to stdout.
// Errors: kInvalidArgument "<problem>; <fix>" on one line (the caller prints it and exits 2),
// e.g. "--focus '(' is not a valid regular expression (Unmatched ( or \\(); ...".
absl::StatusOr<ReportOptions> ParseReportOptions(int argc, char** argv);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_REPORT_OPTIONS_H_
