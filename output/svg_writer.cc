#include "output/svg_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
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

struct Placed {
  uint32_t node;
  double x;
  double w;
};

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

std::string RenderFlameSvg(const FlameTree& tree, const FlameSvgOptions& options,
                           FlameSvgStats* stats) {
  const std::vector<FlameNode>& nodes = tree.nodes();
  const int series = options.differential ? 1 : 0;
  const uint64_t total = tree.root().value[series];
  const uint64_t total_before = tree.root().value[0];
  const double full = options.width - 2.0 * kPad;
  const double scale = total > 0 ? full / static_cast<double>(total) : 0;

  // Subtree sizes (children always have larger indexes than their parent).
  std::vector<uint32_t> subtree(nodes.size(), 1);
  for (size_t i = nodes.size(); i-- > 1;) subtree[nodes[i].parent] += subtree[i];

  // Layout, depth-first in child order (pre-order: the root is drawn first).
  std::vector<Placed> placed;
  size_t pruned = 0;
  uint32_t max_depth = 0;
  if (total > 0) {
    std::vector<std::pair<uint32_t, double>> todo = {{0, 0.0}};
    while (!todo.empty()) {
      auto [id, x] = todo.back();
      todo.pop_back();
      const FlameNode& n = nodes[id];
      const double w = static_cast<double>(n.value[series]) * scale;
      if (n.value[series] == 0) continue;
      if (w < options.min_width_px) {
        pruned += subtree[id];
        continue;
      }
      placed.push_back({id, kPad + x, w});
      max_depth = std::max(max_depth, n.depth);
      // Push children in reverse so the first child is laid out (and emitted) first.
      double cx = x;
      std::vector<std::pair<uint32_t, double>> kids;
      kids.reserve(n.children.size());
      for (uint32_t c : n.children) {
        kids.push_back({c, cx});
        cx += static_cast<double>(nodes[c].value[series]) * scale;
      }
      for (size_t k = kids.size(); k-- > 0;) todo.push_back(kids[k]);
    }
  }
  if (stats != nullptr) {
    stats->frames_drawn = placed.size();
    stats->frames_pruned = pruned;
  }

  // Differential colour scale: the largest change among drawn frames is full intensity.
  std::vector<double> delta;
  double max_abs = 0;
  if (options.differential) {
    delta.resize(nodes.size(), 0);
    for (const Placed& p : placed) {
      const FlameNode& n = nodes[p.node];
      const double after = total > 0 ? static_cast<double>(n.value[1]) / total : 0;
      const double before =
          total_before > 0 ? static_cast<double>(n.value[0]) / total_before : 0;
      delta[p.node] = after - before;
      if (p.node != 0) max_abs = std::max(max_abs, std::fabs(delta[p.node]));
    }
  }

  const int height = kHeader + static_cast<int>(max_depth + 1) * kFrameHeight + kFooter;
  std::string out;
  out.reserve(placed.size() * 200 + 16384);
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
  std::string subtitle = absl::StrCat(WithCommas(total), " samples");
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
  for (const Placed& p : placed) {
    const FlameNode& n = nodes[p.node];
    const std::string& name = tree.names()[n.name];
    const double y = height - kFooter - static_cast<double>(n.depth + 1) * kFrameHeight;
    const uint64_t v = n.value[series];
    out.append("<g><title>");
    AppendXmlEscaped(&out, name);
    absl::StrAppendFormat(&out, " (%s samples, %.2f%%", WithCommas(v),
                          total > 0 ? 100.0 * static_cast<double>(v) / total : 0.0);
    if (options.differential) {
      const double before =
          total_before > 0 ? 100.0 * static_cast<double>(n.value[0]) / total_before : 0;
      absl::StrAppendFormat(&out, "; before %s samples, %.2f%%; change %+.2f%%",
                            WithCommas(n.value[0]), before, 100.0 * delta[p.node]);
    }
    const std::string fill =
        options.differential ? DiffColor(delta[p.node], max_abs)
                             : FlameColor(name, tree.palettes()[n.name]);
    absl::StrAppendFormat(&out,
                          ")</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" "
                          "fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%.0f\">",
                          p.x, y, p.w, kFrameHeight - 1, fill, p.x + 3, y + 11.5);
    AppendXmlEscaped(&out, FitLabel(name, p.w));
    out.append("</text></g>\n");
  }
  out.append("</g>\n<script type=\"text/ecmascript\"><![CDATA[\n");
  absl::StrAppendFormat(&out,
                        "var npConfig = {pad: %d, width: %d, fontSize: %g, total: %d, "
                        "unit: \"samples\"};\n",
                        kPad, options.width, kFontSize, total);
  out.append(kFlameSvgScript);
  out.append("]]></script>\n</svg>\n");
  return out;
}

absl::StatusOr<std::string> RenderProfileSvg(const symbolize::Profile& profile,
                                             const std::string& title, bool flamechart,
                                             int width, double min_width_px,
                                             FlameSvgStats* stats) {
  FlameSvgOptions options;
  options.width = width;
  options.min_width_px = min_width_px;
  options.title = !title.empty() ? title : (flamechart ? "Flame Chart" : "Flame Graph");
  if (!profile.event.empty()) options.subtitle = absl::StrCat("event ", profile.event);
  if (flamechart) {
    NP_ASSIGN_OR_RETURN(FlameTree tree, BuildFlameChartTree(profile));
    absl::StrAppend(&options.subtitle, options.subtitle.empty() ? "" : ", ",
                    "x axis = time order");
    return RenderFlameSvg(tree, options, stats);
  }
  return RenderFlameSvg(BuildFlameGraphTree(profile), options, stats);
}

}  // namespace nativeprof::output
