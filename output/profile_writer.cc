#include "output/profile_writer.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/logging.h"
#include "output/folded_writer.h"
#include "output/pprof_writer.h"
#include "output/speedscope_writer.h"
#include "output/svg_writer.h"

namespace nativeprof::output {

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view name) {
  if (name == "folded") return OutputFormat::kFolded;
  if (name == "svg") return OutputFormat::kSvg;
  if (name == "pprof") return OutputFormat::kPprof;
  if (name == "speedscope") return OutputFormat::kSpeedscope;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown output format '", name, "'; use folded, svg, pprof or speedscope"));
}

absl::string_view OutputExtensionOf(absl::string_view path) {
  for (const OutputExtension& e : kOutputExtensions) {
    if (absl::EndsWithIgnoreCase(path, e.ext)) return path.substr(path.size() - strlen(e.ext));
  }
  return {};
}

OutputFormat FormatFromPath(absl::string_view path) {
  for (const OutputExtension& e : kOutputExtensions) {
    if (absl::EndsWithIgnoreCase(path, e.ext)) return e.format;
  }
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
    case OutputFormat::kSvg: {
      FlameSvgStats stats;
      absl::StatusOr<std::string> svg =
          RenderProfileSvg(profile, options.title, options.flamechart, options.svg_width,
                           options.svg_min_width_px, &stats);
      if (svg.ok() && stats.frames_pruned > 0) {
        Logger("output")->info("flame graph: {} frames drawn, {} narrower than {} px pruned",
                               stats.frames_drawn, stats.frames_pruned,
                               options.svg_min_width_px);
      }
      return svg;
    }
    case OutputFormat::kPprof:
      return RenderPprof(profile);
    case OutputFormat::kSpeedscope:
      return RenderSpeedscope(profile, options.title.empty() ? "nativeprof" : options.title);
  }
  return absl::InvalidArgumentError("unknown output format");
}

absl::Status WriteProfile(const symbolize::Profile& profile, const std::string& path,
                          OutputFormat format, const WriteOptions& options) {
  if (options.flamechart && format == OutputFormat::kSvg && profile.timeline.empty()) {
    // Fail before rendering anything else, with the path that asked for it.
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": --flamechart needs samples in time order, and this profile has "
                           "none (folded files keep no timeline)"));
  }
  NP_ASSIGN_OR_RETURN(std::string contents, RenderProfile(profile, format, options));
  return WriteFileAtomically(path, contents);
}

}  // namespace nativeprof::output
