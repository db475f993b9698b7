// Unwinding throughput on recorded samples (tests/testdata/unwind/ fixtures) with warm caches:
// frames/s and samples/s per core for the native DWARF unwinder (all frames, and only the
// samples whose every frame ran on the fast path) and for the libunwind backend, plus the cost
// of a cold CFI cache (libdw lookups).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "benchmark/benchmark.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/libunwind_unwinder.h"
#include "unwind/sample_fixture.h"

namespace nativeprof::unwind {
namespace {

// The source tree: $NATIVEPROF_SOURCE_DIR, else the directory above this file (CMake compiles it
// by absolute path).
std::string SourceDir() {
  if (const char* env = std::getenv("NATIVEPROF_SOURCE_DIR"); env != nullptr && *env) return env;
  std::string file = __FILE__;
  file = file.substr(0, file.rfind('/'));
  return file.substr(0, file.rfind('/'));
}

const LoadedFixture& Fixture() {
  static LoadedFixture* f = [] {
    const char* name = std::getenv("NP_UNWIND_FIXTURE");
    auto loaded = LoadedFixture::Load(SourceDir() + "/tests/testdata/unwind/" +
                                      (name != nullptr ? name : "nofp_workload"));
    if (!loaded.ok()) {
      std::fprintf(stderr, "cannot load fixture: %s\n", loaded.status().ToString().c_str());
      std::abort();
    }
    return loaded->release();
  }();
  return *f;
}

// `fresh_pid`: every sample is unwound as another process, so none is replayed from the memo
// (what a memoizing unwinder costs when every stack is new).
template <typename U>
void RunUnwinder(benchmark::State& state, U& unwinder, const std::vector<size_t>& which,
                 bool fresh_pid = false) {
  const LoadedFixture& f = Fixture();
  ProcessView process = f.process();
  std::vector<sampler::SampleView> views;
  for (size_t i : which) views.push_back(f.data().samples[i].View());
  UnwoundStack stack;
  for (const auto& v : views) unwinder.Unwind(v, process, &stack);  // warm the caches
  uint64_t frames = 0, samples = 0;
  for (auto _ : state) {
    for (const auto& v : views) {
      if (fresh_pid) ++process.pid;
      unwinder.Unwind(v, process, &stack);
      frames += stack.frames.size();
    }
    samples += views.size();
  }
  state.counters["frames/s"] = benchmark::Counter(static_cast<double>(frames), benchmark::Counter::kIsRate);
  state.counters["samples/s"] = benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
  state.counters["frames/sample"] = samples ? static_cast<double>(frames) / samples : 0;
}

std::vector<size_t> AllSamples() {
  std::vector<size_t> all(Fixture().data().samples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

// Samples whose every frame used a fast-path rule (no expression: no signal frame, no PLT).
std::vector<size_t> FastPathSamples() {
  std::vector<size_t> fast;
  const LoadedFixture& f = Fixture();
  DwarfUnwinder probe({.regs_mask = f.data().regs_mask});
  UnwoundStack stack;
  for (size_t i = 0; i < f.data().samples.size(); ++i) {
    const uint64_t before = probe.stats().expr_frames + probe.stats().fp_fallback_frames;
    probe.Unwind(f.data().samples[i].View(), f.process(), &stack);
    if (probe.stats().expr_frames + probe.stats().fp_fallback_frames == before) fast.push_back(i);
  }
  return fast;
}

// The walk itself (no memo), comparable with the figures before the memo existed.
void BM_NativeAllSamples(benchmark::State& state) {
  DwarfUnwinder u({.regs_mask = Fixture().data().regs_mask, .memoize = false});
  RunUnwinder(state, u, AllSamples());
}
BENCHMARK(BM_NativeAllSamples);

void BM_NativeFastPathOnly(benchmark::State& state) {
  DwarfUnwinder u({.regs_mask = Fixture().data().regs_mask, .memoize = false});
  RunUnwinder(state, u, FastPathSamples());
}
BENCHMARK(BM_NativeFastPathOnly);

// With the memo, every stack new: the walk plus looking each one up, and storing it (every 8th
// once a window of lookups found none: UnwindMemo::kSparseStoreEvery).
void BM_NativeMemoMisses(benchmark::State& state) {
  DwarfUnwinder u({.regs_mask = Fixture().data().regs_mask});
  RunUnwinder(state, u, AllSamples(), /*fresh_pid=*/true);
}
BENCHMARK(BM_NativeMemoMisses);

// With the memo, every stack seen before (an allocation site or a blocking call repeated).
void BM_NativeMemoReplays(benchmark::State& state) {
  DwarfUnwinder u({.regs_mask = Fixture().data().regs_mask});
  RunUnwinder(state, u, AllSamples());
}
BENCHMARK(BM_NativeMemoReplays);

void BM_LibunwindAllSamples(benchmark::State& state) {
  LibunwindUnwinder u({.regs_mask = Fixture().data().regs_mask});
  RunUnwinder(state, u, AllSamples());
}
BENCHMARK(BM_LibunwindAllSamples);

// Every iteration starts with empty CFI caches: the price of first sight of a module.
void BM_NativeColdCache(benchmark::State& state) {
  const LoadedFixture& f = Fixture();
  DwarfUnwinder u({.regs_mask = f.data().regs_mask, .memoize = false});
  UnwoundStack stack;
  uint64_t samples = 0;
  for (auto _ : state) {
    u.files().Clear();
    for (const auto& s : f.data().samples) u.Unwind(s.View(), f.process(), &stack);
    samples += f.data().samples.size();
  }
  state.counters["samples/s"] = benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_NativeColdCache);

}  // namespace
}  // namespace nativeprof::unwind
