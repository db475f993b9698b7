// Costs of libnativeprof inside the profiled process: one start/stop cycle (thread creation,
// perf_event_open per thread and CPU, ring mmaps, counter fds, /proc/self/maps check) and the
// slowdown of a CPU-bound loop while sampling at 999 Hz, against the same loop unprofiled.
#include <cstdint>
#include <cstdio>
#include <string>

#include "benchmark/benchmark.h"
#include "nativeprof/nativeprof.h"

namespace {

__attribute__((noinline)) uint64_t Spin(uint64_t n) {
  uint64_t x = 1;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));  // no closed form, no hoisting
  }
  return x;
}

np_profiler* MakeProfiler(int sample, int count) {
  np_options o;
  np_options_init(&o);
  o.sample = sample;
  o.count = count;
  np_profiler* p = nullptr;
  return np_profiler_create(&o, &p) == NP_OK ? p : nullptr;
}

void BM_StartStop(benchmark::State& state) {
  np_profiler* p = MakeProfiler(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  if (p == nullptr) {
    state.SkipWithError(np_last_error());
    return;
  }
  for (auto _ : state) {
    if (np_profiler_start(p) != NP_OK || np_profiler_stop(p) != NP_OK) {
      state.SkipWithError(np_last_error());
      break;
    }
  }
  np_profiler_destroy(p);
}
// (sample, count): both, sampling only, counting only.
BENCHMARK(BM_StartStop)->Args({1, 1})->Args({1, 0})->Args({0, 1})->UseRealTime();

void BM_SpinUnprofiled(benchmark::State& state) {
  for (auto _ : state) {
    uint64_t n = 1 << 20;
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(Spin(n));
  }
}
BENCHMARK(BM_SpinUnprofiled)->UseRealTime();

void BM_SpinSampled(benchmark::State& state) {
  np_profiler* p = MakeProfiler(1, 0);
  if (p == nullptr || np_profiler_start(p) != NP_OK) {
    state.SkipWithError(np_last_error());
    np_profiler_destroy(p);
    return;
  }
  for (auto _ : state) {
    uint64_t n = 1 << 20;
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(Spin(n));
  }
  np_profiler_stop(p);
  uint64_t samples = 0;
  np_profiler_samples(p, &samples, nullptr);
  state.counters["samples"] = static_cast<double>(samples);
  np_profiler_destroy(p);
}
BENCHMARK(BM_SpinSampled)->UseRealTime();

}  // namespace

namespace {

// Symbolizing and writing a small profile (a few distinct stacks in this binary, libc and the
// kernel): what np_profiler_write_folded costs after a region, e.g. once per benchmark.
void BM_WriteFolded(benchmark::State& state) {
  np_profiler* p = MakeProfiler(1, 0);
  if (p == nullptr || np_profiler_start(p) != NP_OK) {
    state.SkipWithError(np_last_error());
    np_profiler_destroy(p);
    return;
  }
  benchmark::DoNotOptimize(Spin(1 << 26));
  np_profiler_stop(p);
  const std::string path = "/tmp/nativeprof_bench_write.folded";
  for (auto _ : state) {
    if (np_profiler_write_folded(p, path.c_str()) != NP_OK) {
      state.SkipWithError(np_last_error());
      break;
    }
  }
  std::remove(path.c_str());
  np_profiler_destroy(p);
}
BENCHMARK(BM_WriteFolded)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
