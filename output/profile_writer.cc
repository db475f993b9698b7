#include "output/profile_writer.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "output/folded_writer.h"

namespace nativeprof::output {

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view name) {
  if (name == "folded") return OutputFormat::kFolded;
  if (name == "svg") return OutputFormat::kSvg;
  if (name == "pprof") return OutputFormat::kPprof;
  if (name == "speedscope") return OutputFormat::kSpeedscope;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown output format '", name, "'; use folded, svg, pprof or speedscope"));
}

OutputFormat FormatFromPath(absl::string_view path) {
  if (absl::EndsWithIgnoreCase(path, ".svg")) return OutputFormat::kSvg;
  if (absl::EndsWithIgnoreCase(path, ".pb.gz") || absl::EndsWithIgnoreCase(path, ".pprof") ||
      absl::EndsWithIgnoreCase(path, ".pb")) {
    return OutputFormat::kPprof;
  }
  if (absl::EndsWithIgnoreCase(path, ".speedscope.json")) return OutputFormat::kSpeedscope;
  return OutputFormat::kFolded;
}

const char* OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kSvg:
      return "svg";
    case OutputFormat::kPprof:
      return "pprof";
    case OutputFormat::kSpeedscope:
      return "speedscope";
    case OutputFormat::kFolded:
      break;
  }
  return "folded";
}

absl::StatusOr<std::string> RenderProfile(const symbolize::Profile& profile, OutputFormat format,
                                          const WriteOptions& options) {
  switch (format) {
    case OutputFormat::kFolded:
      return RenderFolded(profile);
    case OutputFormat::kSvg:
    case OutputFormat::kPprof:
    case OutputFormat::kSpeedscope:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("output format ", OutputFormatName(format), " is not implemented yet"));
}

absl::Status WriteProfile(const symbolize::Profile& profile, const std::string& path,
                          OutputFormat format, const WriteOptions& options) {
  NP_ASSIGN_OR_RETURN(std::string contents, RenderProfile(profile, format, options));
  return WriteFileAtomically(path, contents);
}

}  // namespace nativeprof::output
