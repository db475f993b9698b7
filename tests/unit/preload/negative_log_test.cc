#include "preload/negative_log.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace nativeprof::preload {
namespace {

// Every input the preload draws is (k + 1) / 2^53 for a 53-bit k: the ends, powers of two, the
// values around sqrt(1/2) where the reduction switches, and a spread of others in between.
TEST(NegativeLogTest, AgreesWithLibmOverTheSampledRange) {
  const double kUnit = 1.0 / 9007199254740992.0;  // 2^-53
  std::vector<double> inputs = {kUnit, 2 * kUnit, 1e-10, 1e-3, 0.25, 0.5, 0.7071067811865475,
                                0.7071067811865476, 0.9, 0.999999, 1.0 - kUnit, 1.0};
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    inputs.push_back((static_cast<double>(x >> 11) + 1.0) * kUnit);
  }
  for (double u : inputs) {
    const double want = -std::log(u);
    EXPECT_NEAR(NegativeLog(u), want, 1e-14 * std::max(want, 1e-2)) << "u = " << u;
  }
  EXPECT_EQ(NegativeLog(1.0), 0.0);
}

// The mean of -ln(u) over uniform u is 1: the sample distances keep their mean RATE.
TEST(NegativeLogTest, DrawsFromUniformValuesHaveMeanOne) {
  uint64_t x = 88172645463325252ull;
  double sum = 0;
  constexpr int kDraws = 1000000;
  for (int i = 0; i < kDraws; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sum += NegativeLog((static_cast<double>(x >> 11) + 1.0) / 9007199254740992.0);
  }
  EXPECT_NEAR(sum / kDraws, 1.0, 0.005);  // the standard error is 0.001
}

}  // namespace
}  // namespace nativeprof::preload
