#include "output/svg_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "output/folded_writer.h"
#include "output/json_util.h"
#include "output/svg_script.h"

namespace nativeprof::output {

namespace {

constexpr int kPad = 10;          // left/right margin
constexpr int kFrameHeight = 16;  // one stack level, including a 1 px gap
constexpr int kHeader = 80;       // title, subtitle, buttons, search box
constexpr int kFooter = 34;       // details line
constexpr double kFontSize = 12;
constexpr double kCharWidth = kFontSize * 0.59;  // average Verdana glyph width at that size

uint64_t Fnv1a(absl::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string Rgb(double r, double g, double b) {
  return absl::StrCat("rgb(", static_cast<int>(r), ",", static_cast<int>(g), ",",
                      static_cast<int>(b), ")");
}

std::string WithCommas(uint64_t v) {
  std::string digits = absl::StrCat(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// The label drawn inside a frame: the whole name, a truncated one ending in "..", or nothing.
std::string FitLabel(const std::string& name, double w) {
  const int n = static_cast<int>(std::floor((w - 6) / kCharWidth));
  if (n < 3) return "";
  if (static_cast<int>(name.size()) <= n) return name;
  return name.substr(0, n - 2) + "..";
}

std::string DiffColor(double delta, double max_abs) {
  const double a = max_abs > 0 ? std::min(1.0, std::fabs(delta) / max_abs) : 0;
  const double fade = 255 * (1 - 0.85 * a);
  if (delta > 0) return Rgb(255, fade, fade);
  if (delta < 0) return Rgb(fade, fade, 255);
  return Rgb(235, 235, 235);
}

}  // namespace

std::string FlameColor(absl::string_view name, Palette palette) {
  const uint64_t h = Fnv1a(name);
  const double v1 = static_cast<double>(h & 0xffff) / 65535.0;
  const double v2 = static_cast<double>((h >> 16) & 0xffff) / 65535.0;
  const double v3 = static_cast<double>((h >> 32) & 0xffff) / 65535.0;
  switch (palette) {
    case Palette::kKernel:  // lavender-blue
      return Rgb(140 + 50 * v1, 140 + 40 * v2, 225 + 30 * v3);
    case Palette::kInlined:  // aqua
      return Rgb(50 + 60 * v1, 165 + 55 * v2, 165 + 55 * v2);
    case Palette::kJit:  // green
      return Rgb(50 + 60 * v1, 190 + 60 * v2, 50 + 60 * v3);
    case Palette::kThread:  // grey
      return Rgb(190 + 30 * v1, 190 + 30 * v1, 190 + 30 * v1);
    case Palette::kRoot:
      return Rgb(210, 210, 210);
    case Palette::kUser:  // hot: red to yellow
      break;
  }
  return Rgb(205 + 50 * v3, 230 * v1, 55 * v2);
}

namespace {

// FlameGraph's "io" palette (blues) for off-CPU graphs; thread and root frames stay grey.
std::string OffCpuColor(absl::string_view name, Palette palette) {
  if (palette == Palette::kThread || palette == Palette::kRoot) return FlameColor(name, palette);
  const uint64_t h = Fnv1a(name);
  const double v1 = static_cast<double>(h & 0xffff) / 65535.0;
  const double v2 = static_cast<double>((h >> 16) & 0xffff) / 65535.0;
  if (palette == Palette::kKernel) return Rgb(60 + 40 * v1, 110 + 50 * v1, 200 + 55 * v2);
  return Rgb(80 + 60 * v1, 80 + 60 * v1, 190 + 55 * v2);
}

// One frame to draw, in samples along the x axis.
struct FlameRect {
  uint32_t name;
  uint32_t depth;
  uint64_t start;
  uint64_t value[2];  // per series; the drawn series decides the width
  uint64_t off_cpu;   // of value[0], the off-CPU part (wall profiles)
};

// Emits the SVG for laid-out frames; `rects` must start with the root.
std::string EmitSvg(const std::vector<std::string>& names, const std::vector<Palette>& palettes,
                    const std::vector<FlameRect>& rects, uint64_t total, uint64_t total_before,
                    size_t pruned, const FlameSvgOptions& options) {
  const int series = options.differential ? 1 : 0;
  const double full = options.width - 2.0 * kPad;
  const double scale = total > 0 ? full / static_cast<double>(total) : 0;
  uint32_t max_depth = 0;
  for (const FlameRect& r : rects) max_depth = std::max(max_depth, r.depth);

  // Differential colour scale: the largest change among drawn frames (the root excluded, it is
  // always 100%) is full intensity.
  std::vector<double> delta;
  double max_abs = 0;
  if (options.differential) {
    delta.reserve(rects.size());
    for (const FlameRect& r : rects) {
      const double after = total > 0 ? static_cast<double>(r.value[1]) / total : 0;
      const double before =
          total_before > 0 ? static_cast<double>(r.value[0]) / total_before : 0;
      delta.push_back(after - before);
      if (r.depth != 0) max_abs = std::max(max_abs, std::fabs(after - before));
    }
  }

  const int height = kHeader + static_cast<int>(max_depth + 1) * kFrameHeight + kFooter;
  std::string out;
  out.reserve(rects.size() * 200 + 16384);
  absl::StrAppendFormat(&out,
                        "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                        "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                        "xmlns=\"http://www.w3.org/2000/svg\">\n",
                        options.width, height, options.width, height);
  out.append("<style type=\"text/css\">");
  out.append(kFlameSvgStyle);
  out.append("</style>\n");
  absl::StrAppendFormat(&out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
                        options.width, height,
                        options.differential ? "rgb(250,250,250)" : "rgb(248,248,236)");
  absl::StrAppendFormat(&out, "<text class=\"title\" x=\"%d\" y=\"24\">", options.width / 2);
  AppendXmlEscaped(&out, options.title);
  out.append("</text>\n");
  std::string subtitle = absl::StrCat(WithCommas(total), " ", options.count_name);
  if (options.differential) {
    absl::StrAppend(&subtitle, " after (widths), ", WithCommas(total_before),
                    " before; red = larger share after, blue = smaller");
  }
  absl::StrAppend(&subtitle, "; ", WithCommas(pruned), " frames narrower than ",
                  absl::StrFormat("%g", options.min_width_px), " px pruned");
  if (!options.subtitle.empty()) absl::StrAppend(&subtitle, "; ", options.subtitle);
  absl::StrAppendFormat(&out, "<text class=\"subtitle\" x=\"%d\" y=\"44\">", options.width / 2);
  AppendXmlEscaped(&out, subtitle);
  out.append("</text>\n");
  absl::StrAppendFormat(&out,
                        "<text id=\"unzoom\" class=\"button hidden\" x=\"%d\" y=\"68\">Reset "
                        "Zoom</text>\n",
                        kPad);
  absl::StrAppendFormat(
      &out,
      "<foreignObject x=\"%d\" y=\"52\" width=\"260\" height=\"24\"><input "
      "xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
      "placeholder=\"Search (regex, Ctrl+F)\" style=\"width:250px;font-size:12px\"/>"
      "</foreignObject>\n",
      options.width - kPad - 260);
  absl::StrAppendFormat(&out, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n",
                        options.width - kPad, height - 12);
  absl::StrAppendFormat(&out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", kPad,
                        height - 12);

  out.append("<g id=\"frames\">\n");
  for (size_t i = 0; i < rects.size(); ++i) {
    const FlameRect& r = rects[i];
    const std::string& name = names[r.name];
    const double x = kPad + static_cast<double>(r.start) * scale;
    const double w = static_cast<double>(r.value[series]) * scale;
    const double y = height - kFooter - static_cast<double>(r.depth + 1) * kFrameHeight;
    const uint64_t v = r.value[series];
    out.append("<g><title>");
    AppendXmlEscaped(&out, name);
    absl::StrAppendFormat(&out, " (%s %s, %.2f%%", WithCommas(v), options.count_name,
                          total > 0 ? 100.0 * static_cast<double>(v) / total : 0.0);
    if (options.differential) {
      const double before =
          total_before > 0 ? 100.0 * static_cast<double>(r.value[0]) / total_before : 0;
      absl::StrAppendFormat(&out, "; before %s %s, %.2f%%; change %+.2f%%",
                            WithCommas(r.value[0]), options.count_name, before, 100.0 * delta[i]);
    }
    const std::string fill =
        options.differential      ? DiffColor(delta[i], max_abs)
        : options.off_cpu_palette || (options.wall_palette && 2 * r.off_cpu > r.value[0])
            ? OffCpuColor(name, palettes[r.name])
            : FlameColor(name, palettes[r.name]);
    absl::StrAppendFormat(&out,
                          ")</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" "
                          "fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%.0f\">",
                          x, y, w, kFrameHeight - 1, fill, x + 3, y + 11.5);
    AppendXmlEscaped(&out, FitLabel(name, w));
    out.append("</text></g>\n");
  }
  out.append("</g>\n<script type=\"text/ecmascript\"><![CDATA[\n");
  absl::StrAppendFormat(&out,
                        "var npConfig = {pad: %d, width: %d, fontSize: %g, total: %d, "
                        "unit: \"%s\"};\n",
                        kPad, options.width, kFontSize, total, options.count_name);
  out.append(kFlameSvgScript);
  out.append("]]></script>\n</svg>\n");
  return out;
}

// Flame chart layout straight from the timeline, without building a tree: consecutive samples
// that share a path prefix extend the open frames; a frame is emitted when it closes. Memory is
// bounded by the stack depth plus the frames drawn, whatever the number of samples.
std::string RenderFlameChart(const symbolize::Profile& profile, const FlameSvgOptions& options,
                             FlameSvgStats* stats) {
  FlameTree names;  // only for interning names and palettes
  std::vector<uint32_t> frame_names(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    frame_names[i] = names.InternName(FoldedFrameName(profile.frames[i]),
                                      PaletteOf(profile.frames[i].kind));
  }
  const uint32_t unknown = names.InternName("[unknown]", Palette::kUser);
  // Samples are one unit wide; in a time profile each is as wide as its time (us).
  const bool timed = profile.count_unit == "us";
  auto width_of = [&](const symbolize::TimedSample& ts) -> uint64_t {
    if (!timed || ts.stack >= profile.stacks.size()) return 1;
    const symbolize::ProfileStack& s = profile.stacks[ts.stack];
    const uint64_t ns = ts.weight != 0 ? ts.weight : s.weight;
    return std::max<uint64_t>(1, (ns + 500) / 1000);
  };
  uint64_t total = timed ? 0 : profile.timeline.size();
  for (const symbolize::TimedSample& ts : profile.timeline) {
    if (timed && ts.stack < profile.stacks.size()) total += width_of(ts);
  }
  const double scale = total > 0 ? (options.width - 2.0 * kPad) / static_cast<double>(total) : 0;
  const uint64_t min_samples =
      scale > 0 ? static_cast<uint64_t>(std::ceil(options.min_width_px / scale)) : 0;

  std::vector<FlameRect> rects = {{names.root().name, 0, 0, {total, 0}, 0}};
  size_t pruned = 0;
  std::vector<FlameRect> open;  // open[d] = frame at depth d + 1
  auto close_to = [&](size_t depth) {
    while (open.size() > depth) {
      if (open.back().value[0] >= min_samples) {
        rects.push_back(open.back());
      } else {
        ++pruned;
      }
      open.pop_back();
    }
  };
  std::vector<uint32_t> path;
  uint64_t x = 0;
  for (const symbolize::TimedSample& ts : profile.timeline) {
    if (ts.stack >= profile.stacks.size()) continue;
    const symbolize::ProfileStack& s = profile.stacks[ts.stack];
    path.clear();
    path.push_back(names.InternName(SanitizeFoldedName(s.thread_name), Palette::kThread));
    for (uint32_t f : s.frames) path.push_back(f < frame_names.size() ? frame_names[f] : unknown);
    size_t common = 0;
    while (common < path.size() && common < open.size() && open[common].name == path[common]) {
      ++common;
    }
    close_to(common);
    for (size_t d = common; d < path.size(); ++d) {
      open.push_back({path[d], static_cast<uint32_t>(d + 1), x, {0, 0}, 0});
    }
    const uint64_t w = width_of(ts);
    for (FlameRect& r : open) {
      r.value[0] += w;
      if (s.off_cpu) r.off_cpu += w;
    }
    x += w;
  }
  close_to(0);
  if (stats != nullptr) {
    stats->frames_drawn = rects.size();
    stats->frames_pruned = pruned;
  }
  return EmitSvg(names.names(), names.palettes(), rects, total, 0, pruned, options);
}

}  // namespace

std::string RenderFlameSvg(const FlameTree& tree, const FlameSvgOptions& options,
                           FlameSvgStats* stats) {
  const std::vector<FlameNode>& nodes = tree.nodes();
  const int series = options.differential ? 1 : 0;
  const uint64_t total = tree.root().value[series];
  const double scale = total > 0 ? (options.width - 2.0 * kPad) / static_cast<double>(total) : 0;

  // Subtree sizes, for counting what pruning leaves out (children have larger indexes).
  std::vector<uint32_t> subtree(nodes.size(), 1);
  std::vector<uint32_t> parent(nodes.size(), 0);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    for (uint32_t c = nodes[i].first_child; c != 0; c = nodes[c].next_sibling) parent[c] = i;
  }
  for (size_t i = nodes.size(); i-- > 1;) subtree[parent[i]] += subtree[i];

  // Depth-first layout in child order; the root comes first.
  std::vector<FlameRect> rects;
  size_t pruned = 0;
  if (total > 0) {
    std::vector<std::pair<uint32_t, uint64_t>> todo = {{0, 0}};
    std::vector<std::pair<uint32_t, uint64_t>> kids;
    while (!todo.empty()) {
      auto [id, x] = todo.back();
      todo.pop_back();
      const FlameNode& n = nodes[id];
      if (n.value[series] == 0) continue;
      if (static_cast<double>(n.value[series]) * scale < options.min_width_px) {
        pruned += subtree[id];
        continue;
      }
      rects.push_back({n.name, n.depth, x, {n.value[0], n.value[1]}, n.off_cpu});
      kids.clear();
      uint64_t cx = x;
      for (uint32_t c = n.first_child; c != 0; c = nodes[c].next_sibling) {
        kids.push_back({c, cx});
        cx += nodes[c].value[series];
      }
      todo.insert(todo.end(), kids.rbegin(), kids.rend());
    }
  }
  if (stats != nullptr) {
    stats->frames_drawn = rects.size();
    stats->frames_pruned = pruned;
  }
  return EmitSvg(tree.names(), tree.palettes(), rects, total, tree.root().value[0], pruned,
                 options);
}

absl::StatusOr<std::string> RenderProfileSvg(const symbolize::Profile& profile,
                                             const std::string& title, bool flamechart,
                                             int width, double min_width_px,
                                             FlameSvgStats* stats) {
  FlameSvgOptions options;
  options.width = width;
  options.min_width_px = min_width_px;
  const bool off_cpu = profile.is_off_cpu_view();
  const char* kind = off_cpu                   ? "Off-CPU Time "
                     : profile.event == "wall" ? "Wall-Clock Time "
                                               : "";
  options.title = !title.empty() ? title
                  : flamechart   ? absl::StrCat(kind, "Flame Chart")
                                 : absl::StrCat(kind, "Flame Graph");
  options.count_name = profile.count_unit;
  options.off_cpu_palette = off_cpu;
  options.wall_palette = profile.event == "wall";
  if (!profile.event.empty()) options.subtitle = absl::StrCat("event ", profile.event);
  if (flamechart) {
    if (profile.timeline.empty()) {
      return absl::InvalidArgumentError(
          "--flamechart needs samples in time order, and this profile has none (folded files "
          "keep no timeline); record with -o FILE.svg --flamechart instead");
    }
    absl::StrAppend(&options.subtitle, options.subtitle.empty() ? "" : ", ",
                    "x axis = time order");
    return RenderFlameChart(profile, options, stats);
  }
  return RenderFlameSvg(BuildFlameGraphTree(profile), options, stats);
}

}  // namespace nativeprof::output
