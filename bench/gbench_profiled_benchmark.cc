// Sample use of nativeprof/benchmark.h: two benchmarks that burn CPU in different functions.
// Run with --nativeprof_out=DIR to get DIR/BM_ParseA.folded (only ParseDigitsA) and
// DIR/BM_HashB_<n>.folded (only HashBytesB), and IPC / page-fault / context-switch user counters
// in the table and in --benchmark_format=json. The integration test library_gbench_test runs it.
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "nativeprof/benchmark.h"

namespace {

// noinline + a data dependency keep each function a real frame the profile can name.
__attribute__((noinline)) uint64_t ParseDigitsA(const std::string& text) {
  uint64_t value = 0;
  for (char c : text) {
    if (c >= '0' && c <= '9') value = value * 10 + static_cast<uint64_t>(c - '0');
    else value ^= static_cast<uint64_t>(c);
  }
  return value;
}

__attribute__((noinline)) uint64_t HashBytesB(const std::vector<uint8_t>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

void BM_ParseA(benchmark::State& state) {
  std::string text;
  for (int i = 0; i < 4096; ++i) text.push_back(static_cast<char>('0' + i % 11));
  for (auto _ : state) benchmark::DoNotOptimize(ParseDigitsA(text));
}

void BM_HashB(benchmark::State& state) {
  std::vector<uint8_t> bytes(static_cast<size_t>(state.range(0)), 7);
  for (auto _ : state) benchmark::DoNotOptimize(HashBytesB(bytes));
}

}  // namespace

NATIVEPROF_BENCHMARK(BM_ParseA);
NATIVEPROF_BENCHMARK(BM_HashB)->Arg(4096);

NATIVEPROF_BENCHMARK_MAIN();
