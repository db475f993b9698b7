// C++ test program for DWARF unwinding, built -O2 -fomit-frame-pointer: templates, virtual calls,
// std::sort with an inlined comparator, lambdas. Usage: nofp_cpp [seconds=1]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {

volatile uint64_t g_sink;

struct Shape {
  virtual ~Shape() = default;
  virtual uint64_t Work(uint64_t x) const = 0;
};

struct Square final : Shape {
  // The length varies with x (200,000-331,071 steps) so that the main loop's period does not stay
  // in step with a 999 Hz sampling timer (see LeafWork in nofp_workload.c).
  __attribute__((noinline)) uint64_t Work(uint64_t x) const override {
    const int steps = 200000 + static_cast<int>(x & 0x1FFFF);
    for (int i = 0; i < steps; ++i) x = x * x + static_cast<uint64_t>(i);
    return x;
  }
};

template <int N>
__attribute__((noinline)) uint64_t Nest(const Shape& s, uint64_t x) {
  return Nest<N - 1>(s, x + N) ^ static_cast<uint64_t>(N);
}
template <>
__attribute__((noinline)) uint64_t Nest<0>(const Shape& s, uint64_t x) {
  return s.Work(x);
}

__attribute__((noinline)) void SortWork(std::vector<uint32_t>* v, uint64_t seed) {
  for (auto& e : *v) e = static_cast<uint32_t>(seed = seed * 6364136223846793005ull + 1);
  std::sort(v->begin(), v->end(), [](uint32_t a, uint32_t b) { return (a ^ 0x55) < (b ^ 0x55); });
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  std::unique_ptr<Shape> shape = std::make_unique<Square>();
  std::vector<uint32_t> v(20000);
  uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end) {
    x += Nest<12>(*shape, x);
    SortWork(&v, x);
    x += v[v.size() / 2];
  }
  g_sink = x;
  return 0;
}
