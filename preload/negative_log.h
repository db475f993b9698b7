// -ln(u) for the preload's sample distances, without libm: log() was the preload's only use of
// it, and LD_PRELOAD then loaded libm.so into every process of a profiled command, about 1.4 ms
// each on this VM (a shell loop of 100 /bin/true calls ran 10 % slower for it).
//
// Header only: the preload includes it, and so does its unit test.
#ifndef NATIVEPROF_PRELOAD_NEGATIVE_LOG_H_
#define NATIVEPROF_PRELOAD_NEGATIVE_LOG_H_

#include <cstdint>
#include <cstring>

namespace nativeprof::preload {

// -ln(u) for u in (0, 1] (a normal double: the preload's smallest is 2^-53), within 1e-14 of the
// true value relative to it. u = m * 2^e with m in [sqrt(1/2), sqrt(2)), and ln(m) = 2 atanh(s)
// with s = (m - 1) / (m + 1), |s| < 0.172, whose series to s^19 leaves under 1e-16.
inline double NegativeLog(double u) {
  uint64_t bits;
  std::memcpy(&bits, &u, sizeof(bits));
  int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52);
  double m;
  std::memcpy(&m, &bits, sizeof(m));
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++exponent;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double series = 1.0 / 19.0;  // 1 + s^2/3 + s^4/5 + ... + s^18/19, by Horner's rule
  for (int k = 17; k >= 1; k -= 2) series = series * s2 + 1.0 / k;
  constexpr double kLn2 = 0.693147180559945309417;
  return -(static_cast<double>(exponent) * kLn2 + 2.0 * s * series);
}

}  // namespace nativeprof::preload

#endif  // NATIVEPROF_PRELOAD_NEGATIVE_LOG_H_
