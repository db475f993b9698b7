// The Google Benchmark hook in a project of its own: one folded file per benchmark with
// --nativeprof_out=DIR, counters in the user counters.
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "nativeprof/benchmark.h"

namespace {

__attribute__((noinline)) uint64_t SumExample(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (uint64_t x : v) s += x * x;
  return s;
}

void BM_SumExample(benchmark::State& state) {
  std::vector<uint64_t> v(static_cast<size_t>(state.range(0)), 3);
  for (auto _ : state) benchmark::DoNotOptimize(SumExample(v));
}

}  // namespace

NATIVEPROF_BENCHMARK(BM_SumExample)->Arg(1 << 12);
NATIVEPROF_BENCHMARK_MAIN();
