// The demo workload that tools/demo.sh profiles: three threads doing recognizably different work
// (sorting, hashing strings, a small matrix multiply) for about argv[1] seconds (default 3), so a
// first profile shows a few distinct hot paths and the C++ names nativeprof demangles. A fourth
// thread mostly waits (for each matrix result, on a condition variable) and the three workers
// share two CPUs here, so `record --off-cpu` has blocking and run-queue waits to show.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <functional>
#include <vector>

namespace demo {

using Clock = std::chrono::steady_clock;

template <typename T>
__attribute__((noinline)) void SortBatch(std::vector<T>& values, std::mt19937_64& rng) {
  for (T& v : values) v = static_cast<T>(rng());
  std::sort(values.begin(), values.end());
}

__attribute__((noinline)) size_t CountWords(const std::vector<std::string>& words) {
  std::unordered_map<std::string, size_t> counts;
  for (const std::string& w : words) ++counts[w];
  return counts.size();
}

__attribute__((noinline)) std::vector<std::string> MakeWords(std::mt19937_64& rng, size_t n) {
  std::vector<std::string> words;
  words.reserve(n);
  for (size_t i = 0; i < n; ++i) words.push_back("word" + std::to_string(rng() % 5000));
  return words;
}

__attribute__((noinline)) double MultiplyMatrices(size_t n, std::mt19937_64& rng) {
  std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
  for (double& x : a) x = static_cast<double>(rng() % 100) / 10.0;
  for (double& x : b) x = static_cast<double>(rng() % 100) / 10.0;
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < n; ++k)
      for (size_t j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
  return c[n + 1];
}

void SortWorker(Clock::time_point end) {
  std::mt19937_64 rng(1);
  std::vector<uint64_t> values(200000);
  while (Clock::now() < end) SortBatch(values, rng);
}

void HashWorker(Clock::time_point end) {
  std::mt19937_64 rng(2);
  size_t total = 0;
  while (Clock::now() < end) total += CountWords(MakeWords(rng, 100000));
  if (total == 42) std::puts("");
}

// Matrix results handed to the result logger, one at a time.
struct ResultQueue {
  std::mutex mutex;
  std::condition_variable ready;
  std::vector<double> results;
  bool done = false;
};

__attribute__((noinline)) bool WaitForResult(ResultQueue& q, double* result) {
  std::unique_lock<std::mutex> lock(q.mutex);
  q.ready.wait(lock, [&] { return q.done || !q.results.empty(); });
  if (q.results.empty()) return false;
  *result = q.results.back();
  q.results.pop_back();
  return true;
}

void ResultLogger(ResultQueue& q) {
  double result = 0, sum = 0;
  while (WaitForResult(q, &result)) sum += result;
  if (sum == 42) std::puts("");
}

void MatrixWorker(Clock::time_point end, ResultQueue& q) {
  std::mt19937_64 rng(3);
  while (Clock::now() < end) {
    const double r = MultiplyMatrices(160, rng);
    std::lock_guard<std::mutex> lock(q.mutex);
    q.results.push_back(r);
    q.ready.notify_one();
  }
  std::lock_guard<std::mutex> lock(q.mutex);
  q.done = true;
  q.ready.notify_one();
}

}  // namespace demo

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const auto end = demo::Clock::now() + std::chrono::duration_cast<demo::Clock::duration>(
                                            std::chrono::duration<double>(seconds));
  std::thread sorter(demo::SortWorker, end);
  std::thread hasher(demo::HashWorker, end);
  demo::ResultQueue queue;
  std::thread logger(demo::ResultLogger, std::ref(queue));
  demo::MatrixWorker(end, queue);
  sorter.join();
  hasher.join();
  logger.join();
  return 0;
}
