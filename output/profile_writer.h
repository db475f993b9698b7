// The writer dispatcher: turns a symbolize::Profile into one of the output formats (folded, flame
// graph SVG, pprof, speedscope) and writes it atomically. `record` and `convert` call
// WriteProfile once per `-o`; everything here runs on the caller's thread after sampling stopped
// and keeps no state between calls.
#ifndef NATIVEPROF_OUTPUT_PROFILE_WRITER_H_
#define NATIVEPROF_OUTPUT_PROFILE_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "output/folded_reader.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

enum class OutputFormat { kFolded, kSvg, kPprof, kSpeedscope };

// Format from a --format name: "folded", "svg", "pprof", "speedscope" (case-sensitive).
// Errors: kInvalidArgument naming the accepted names.
absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view name);

// The extensions an output's name may end in, whole (".pb.gz", not ".gz"), and their formats.
struct OutputExtension {
  const char* ext;
  OutputFormat format;
};
inline constexpr OutputExtension kOutputExtensions[] = {
    {".speedscope.json", OutputFormat::kSpeedscope}, {".pb.gz", OutputFormat::kPprof},
    {".svg", OutputFormat::kSvg},                    {".folded", OutputFormat::kFolded},
    {".pprof", OutputFormat::kPprof},                {".pb", OutputFormat::kPprof},
    {".txt", OutputFormat::kFolded}};
// The one of kOutputExtensions `path` ends in (ignoring case), as it is spelled in `path`; ""
// for none.
absl::string_view OutputExtensionOf(absl::string_view path);

// Format inferred from the file name: ".svg" -> kSvg; ".pb.gz", ".pprof", ".pb" -> kPprof;
// ".speedscope.json" -> kSpeedscope; anything else -> kFolded.
OutputFormat FormatFromPath(absl::string_view path);

// The canonical --format name of `format` ("folded", "svg", ...).
const char* OutputFormatName(OutputFormat format);

struct WriteOptions {
  std::string title;        // SVG title; empty -> "Flame Graph" (or "Flame Chart")
  bool flamechart = false;  // SVG: samples in time order (needs Profile::timeline), not merged
  int svg_width = 1200;     // SVG: image width in pixels; frames narrower than
                            // svg_min_width_px are pruned
  double svg_min_width_px = 0.1;
};

// Renders the profile in `format`. Pure; deterministic byte for byte for the same input.
// Errors: kInvalidArgument (e.g. --flamechart on a profile without a timeline).
absl::StatusOr<std::string> RenderProfile(const symbolize::Profile& profile, OutputFormat format,
                                          const WriteOptions& options);

// Renders, then writes `path` atomically (WriteFileAtomically). Errors: those of RenderProfile,
// and the errno codes of the write (kPermissionDenied, kNotFound, ...), with the path in the
// message.
absl::Status WriteProfile(const symbolize::Profile& profile, const std::string& path,
                          OutputFormat format, const WriteOptions& options);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_PROFILE_WRITER_H_
