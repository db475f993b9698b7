// The cost of one malloc/free pair, run with and without LD_PRELOAD of the allocation profiler:
// the difference is what the profiler adds to each allocation.
#include <benchmark/benchmark.h>

#include <cstdlib>

static void BM_MallocFreePair(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = malloc(size);
    benchmark::DoNotOptimize(p);  // keeps the compiler from eliding the pair
    free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MallocFreePair)->Arg(16)->Arg(64)->Arg(256);

// Defined here so the file also builds on its own with -lbenchmark; under bench/CMakeLists.txt
// this main is the one linked, and benchmark_main's is left out of the archive.
BENCHMARK_MAIN();
