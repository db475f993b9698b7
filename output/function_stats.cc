#include "output/function_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "output/folded_writer.h"

namespace nativeprof::output {

FunctionTable CountFunctions(const symbolize::Profile& profile) {
  std::vector<std::string> names;
  names.reserve(profile.frames.size());
  for (const symbolize::ProfileFrame& f : profile.frames) names.push_back(FoldedFrameName(f));
  // Frames with the same display name (e.g. one function at several offsets) are one function.
  return CountGroups(profile, names);
}

FunctionTable CountGroups(const symbolize::Profile& profile,
                          const std::vector<std::string>& frame_keys) {
  FunctionTable table;
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<size_t> frame_fn(std::min(frame_keys.size(), profile.frames.size()));
  for (size_t i = 0; i < frame_fn.size(); ++i) {
    auto [it, inserted] = index.try_emplace(frame_keys[i], table.functions.size());
    if (inserted) table.functions.push_back({frame_keys[i], 0, 0});
    frame_fn[i] = it->second;
  }
  std::vector<uint64_t> last_seen(table.functions.size(), UINT64_MAX);
  uint64_t stack_no = 0;
  for (const symbolize::ProfileStack& s : profile.stacks) {
    ++stack_no;
    if (s.samples == 0) continue;
    table.samples += s.samples;
    for (uint32_t f : s.frames) {
      if (f >= frame_fn.size()) continue;
      const size_t fn = frame_fn[f];
      if (last_seen[fn] == stack_no) continue;  // recursion: once per stack
      last_seen[fn] = stack_no;
      table.functions[fn].total += s.samples;
    }
    if (!s.frames.empty() && s.frames.back() < frame_fn.size()) {
      table.functions[frame_fn[s.frames.back()]].self += s.samples;
    }
  }
  std::sort(table.functions.begin(), table.functions.end(),
            [](const FunctionCounts& a, const FunctionCounts& b) { return a.name < b.name; });
  return table;
}

double TwoSidedZ(double level) {
  // Solve erfc(z / sqrt 2) = 1 - level by bisection: monotone, and precise enough in 100 steps.
  const double target = 1 - level;
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    if (std::erfc(mid / std::sqrt(2.0)) > target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

Interval WilsonInterval(uint64_t k, uint64_t n, double level) {
  if (n == 0) return {0, 1};
  const double z = TwoSidedZ(level);
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double z2 = z * z;
  const double denom = 1 + z2 / nn;
  const double center = (p + z2 / (2 * nn)) / denom;
  const double half = z / denom * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

bool IsNoise(uint64_t k, uint64_t n) {
  if (k == 0 || n == 0) return true;
  const Interval ci = WilsonInterval(k, n, 0.95);
  return ci.high > 3 * ci.low;
}

double TwoProportionZ(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2) {
  if (n1 == 0 || n2 == 0) return 0;
  const double p1 = static_cast<double>(k1) / static_cast<double>(n1);
  const double p2 = static_cast<double>(k2) / static_cast<double>(n2);
  const double pooled = static_cast<double>(k1 + k2) / static_cast<double>(n1 + n2);
  const double se = std::sqrt(pooled * (1 - pooled) *
                              (1.0 / static_cast<double>(n1) + 1.0 / static_cast<double>(n2)));
  if (se == 0) return 0;
  return (p2 - p1) / se;
}

}  // namespace nativeprof::output
