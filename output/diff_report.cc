#include "output/diff_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_format.h"
#include "output/flame_tree.h"
#include "output/function_stats.h"
#include "output/svg_writer.h"
#include "output/text_report.h"

namespace nativeprof::output {

DiffResult DiffProfiles(const symbolize::Profile& before, const symbolize::Profile& after,
                        double level) {
  const FunctionTable b = CountFunctions(before);
  const FunctionTable a = CountFunctions(after);
  DiffResult result;
  result.before_samples = b.samples;
  result.after_samples = a.samples;
  result.level = level;
  result.critical_z = TwoSidedZ(level);
  result.count_unit = after.count_unit;
  const bool sampled = result.count_unit == "samples";
  std::map<std::string, FunctionChange> by_name;
  for (const FunctionCounts& f : b.functions) {
    FunctionChange& c = by_name[f.name];
    c.name = f.name;
    c.self_before = f.self;
    c.total_before = f.total;
  }
  for (const FunctionCounts& f : a.functions) {
    FunctionChange& c = by_name[f.name];
    c.name = f.name;
    c.self_after = f.self;
    c.total_after = f.total;
  }
  auto share = [](uint64_t k, uint64_t n) { return n == 0 ? 0.0 : static_cast<double>(k) / n; };
  for (auto& [name, c] : by_name) {
    c.self_delta = share(c.self_after, a.samples) - share(c.self_before, b.samples);
    c.total_delta = share(c.total_after, a.samples) - share(c.total_before, b.samples);
    c.self_z = TwoProportionZ(c.self_before, b.samples, c.self_after, a.samples);
    c.total_z = TwoProportionZ(c.total_before, b.samples, c.total_after, a.samples);
    c.self_significant = sampled && std::fabs(c.self_z) > result.critical_z;
    c.total_significant = sampled && std::fabs(c.total_z) > result.critical_z;
    result.changes.push_back(c);
  }
  std::stable_sort(result.changes.begin(), result.changes.end(),
                   [](const FunctionChange& x, const FunctionChange& y) {
                     return std::max(std::fabs(x.self_delta), std::fabs(x.total_delta)) >
                            std::max(std::fabs(y.self_delta), std::fabs(y.total_delta));
                   });
  return result;
}

std::string RenderDiffTable(const DiffResult& diff, size_t top_n) {
  const bool sampled = diff.count_unit == "samples";
  std::string out =
      sampled ? absl::StrFormat(
                    "Function share changes, BEFORE %s samples -> AFTER %s samples "
                    "(two-proportion z-test, %g%% level: |z| > %.2f is significant)\n",
                    WithThousands(diff.before_samples), WithThousands(diff.after_samples),
                    100 * diff.level, diff.critical_z)
              : absl::StrFormat(
                    "Function share changes, BEFORE %s %s -> AFTER %s %s (%s: no sampling test "
                    "applies; compare repeated runs)\n",
                    WithThousands(diff.before_samples), diff.count_unit,
                    WithThousands(diff.after_samples), diff.count_unit,
                    diff.count_unit == "us" ? "measured time" : "weighted counts");
  absl::StrAppendFormat(&out, "%-31s %-31s  %s\n", "        self: before -> after",
                        "       total: before -> after", "function");
  size_t shown = 0, significant = 0;
  for (const FunctionChange& c : diff.changes) {
    if (c.significant()) ++significant;
    if (shown >= top_n) continue;
    if (c.self_delta == 0 && c.total_delta == 0) continue;
    ++shown;
    auto cell = [&](uint64_t kb, uint64_t ka, double delta, bool sig) {
      const double pb = diff.before_samples ? 100.0 * kb / diff.before_samples : 0;
      const double pa = diff.after_samples ? 100.0 * ka / diff.after_samples : 0;
      return absl::StrFormat("%6.2f%% -> %6.2f%% %+7.2f %s", pb, pa, 100 * delta,
                             sig ? "*" : " ");
    };
    absl::StrAppendFormat(&out, "%s  %s   %s\n",
                          cell(c.self_before, c.self_after, c.self_delta, c.self_significant),
                          cell(c.total_before, c.total_after, c.total_delta,
                               c.total_significant),
                          c.name);
  }
  if (!sampled) {
    absl::StrAppend(&out, "\nChanges are in percentage points of the ",
                    diff.count_unit == "us" ? "time (us)" : diff.count_unit, " of each side.\n");
    return out;
  }
  absl::StrAppendFormat(
      &out,
      "\n* = significant at the %g%% level; unmarked changes are within what sampling noise "
      "explains.\n%d of %d functions changed significantly. Changes are in percentage points "
      "of all samples.\n",
      100 * diff.level, static_cast<int>(significant), static_cast<int>(diff.changes.size()));
  return out;
}

std::string RenderDiffSvg(const symbolize::Profile& before, const symbolize::Profile& after,
                          const std::string& title) {
  FlameTree tree;
  tree.AddProfile(before, 0);
  tree.AddProfile(after, 1);
  tree.Finish();
  FlameSvgOptions options;
  options.title = title.empty() ? "Differential Flame Graph" : title;
  options.differential = true;
  options.count_name = after.count_unit;  // diff refuses profiles of two units
  return RenderFlameSvg(tree, options, nullptr);
}

}  // namespace nativeprof::output
