// Writing a large profile in every output format: 1,000,000 samples over 100,000 distinct stacks
// (4 threads, depth 8-40, 20,000 functions, shared prefixes and a heavy-tailed sample
// distribution, like a real recording). Goal: well under a second per format; SVG under 20 MB.
// Counters report the output size.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "output/profile_writer.h"
#include "symbolize/profile.h"

namespace nativeprof::output {
namespace {

const symbolize::Profile& BigProfile(bool with_timeline) {
  static const symbolize::Profile* profiles[2] = {nullptr, nullptr};
  const symbolize::Profile*& cached = profiles[with_timeline ? 1 : 0];
  if (cached != nullptr) return *cached;
  auto* p = new symbolize::Profile;
  std::mt19937_64 rng(7);
  constexpr int kFunctions = 20000;
  for (int i = 0; i < kFunctions; ++i) {
    symbolize::ProfileFrame f;
    f.function = absl::StrCat("ns::Module", i % 50, "::function_", i, "(int, std::string const&)");
    f.kind = i % 40 == 0 ? symbolize::ProfileFrameKind::kKernel
                         : (i % 17 == 0 ? symbolize::ProfileFrameKind::kInlined
                                        : symbolize::ProfileFrameKind::kUser);
    f.module = absl::StrCat("/usr/lib/libmod", i % 30, ".so");
    f.build_id = absl::StrCat("0123456789abcdef", i % 30);
    f.module_offset = 0x1000 + 16 * static_cast<uint64_t>(i);
    p->frames.push_back(std::move(f));
  }
  // Heavy tail: stack i gets weight ~ 1 / (i+1)^0.7, scaled to 1,000,000 samples in total.
  constexpr int kStacks = 100000;
  double norm = 0;
  for (int i = 0; i < kStacks; ++i) norm += std::pow(i + 1.0, -0.7);
  uint64_t total = 0;
  for (int i = 0; i < kStacks; ++i) {
    symbolize::ProfileStack s;
    s.thread_name = absl::StrCat("worker-", i % 4);
    s.pid = 100;
    s.tid = 100 + i % 4;
    const int depth = 8 + static_cast<int>(rng() % 33);
    uint64_t node = i % 4;  // walk a random tree: children of a frame are a small fan-out
    for (int d = 0; d < depth; ++d) {
      node = node * 31 + (d < 6 ? rng() % 3 : rng() % 50);
      s.frames.push_back(static_cast<uint32_t>(node % kFunctions));
    }
    s.samples = 1 + static_cast<uint64_t>(std::pow(i + 1.0, -0.7) / norm * 950000);
    s.weight = s.samples * 1000000;
    total += s.samples;
    p->stacks.push_back(std::move(s));
  }
  if (with_timeline) {
    for (uint32_t i = 0; i < p->stacks.size(); ++i) {
      for (uint64_t k = 0; k < p->stacks[i].samples; ++k) p->timeline.push_back({0, i});
    }
    std::shuffle(p->timeline.begin(), p->timeline.end(), rng);
    for (size_t i = 0; i < p->timeline.size(); ++i) p->timeline[i].time_ns = i * 1000000;
  }
  p->sample_frequency_hz = 1000;
  cached = p;
  return *p;
}

void Run(benchmark::State& state, OutputFormat format, bool timeline, bool flamechart) {
  const symbolize::Profile& p = BigProfile(timeline);
  WriteOptions options;
  options.flamechart = flamechart;
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<std::string> out = RenderProfile(p, format, options);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    bytes = out->size();
    benchmark::DoNotOptimize(out->data());
  }
  uint64_t samples = 0;
  for (const auto& s : p.stacks) samples += s.samples;
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["stacks"] = static_cast<double>(p.stacks.size());
}

void BM_Folded(benchmark::State& s) { Run(s, OutputFormat::kFolded, false, false); }
void BM_Svg(benchmark::State& s) { Run(s, OutputFormat::kSvg, false, false); }
void BM_Pprof(benchmark::State& s) { Run(s, OutputFormat::kPprof, false, false); }
void BM_Speedscope(benchmark::State& s) { Run(s, OutputFormat::kSpeedscope, false, false); }
void BM_SvgFlameChart(benchmark::State& s) { Run(s, OutputFormat::kSvg, true, true); }
void BM_SpeedscopeTimeline(benchmark::State& s) {
  Run(s, OutputFormat::kSpeedscope, true, false);
}

BENCHMARK(BM_Folded)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Svg)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Pprof)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Speedscope)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_SvgFlameChart)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_SpeedscopeTimeline)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace nativeprof::output
