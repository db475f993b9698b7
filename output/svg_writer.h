// Flame graph SVG writer: lays out a FlameTree (flamegraph.pl's conventions: root at the bottom,
// children sorted by name, frames narrower than a minimum width pruned) and emits one
// self-contained interactive SVG (embedded CSS + JavaScript, no network). Also renders
// differential flame graphs for `diff`. Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_SVG_WRITER_H_
#define NATIVEPROF_OUTPUT_SVG_WRITER_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "output/flame_tree.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

struct FlameSvgOptions {
  std::string title = "Flame Graph";
  std::string subtitle;        // extra text under the title (may be empty)
  int width = 1200;            // pixels
  double min_width_px = 0.1;   // frames narrower than this are left out, with their callees
  // Differential: widths from series 1 (AFTER), colours from the change of each frame's share
  // of all samples between series 0 (BEFORE) and 1: red grew, blue shrank.
  bool differential = false;
  std::string count_name = "samples";  // unit of the counts: "samples", or "us" for time profiles
  // Off-CPU time: every frame in FlameGraph's cool (blue) palette, as its off-CPU graphs use,
  // so the graph is not mistaken for a CPU profile.
  bool off_cpu_palette = false;
  // Wall-clock time: frames whose time is mostly off-CPU in the cool palette, the others in the
  // warm one, so where threads waited stands apart from where they ran.
  bool wall_palette = false;
};

struct FlameSvgStats {
  size_t frames_drawn = 0;
  size_t frames_pruned = 0;  // tree nodes left out because they were narrower than min_width_px
};

// Renders the tree. `stats` may be null. Deterministic byte for byte (colours come from a hash of
// the name, so the same function gets the same colour in every run).
std::string RenderFlameSvg(const FlameTree& tree, const FlameSvgOptions& options,
                           FlameSvgStats* stats);

// Flame graph (or, with `flamechart`, flame chart from the timeline) of a profile.
// Errors: kInvalidArgument for a flame chart of a profile without a timeline.
absl::StatusOr<std::string> RenderProfileSvg(const symbolize::Profile& profile,
                                             const std::string& title, bool flamechart,
                                             int width, double min_width_px,
                                             FlameSvgStats* stats);

// The deterministic fill colour ("rgb(r,g,b)") of a name in a palette.
std::string FlameColor(absl::string_view name, Palette palette);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_SVG_WRITER_H_
