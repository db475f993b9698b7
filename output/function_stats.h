// Per-function sample statistics shared by `report` and `diff`: self and total sample counts per
// function name, Wilson score intervals for their shares, and the two-proportion z-test. Pure
// functions; any thread.
#ifndef NATIVEPROF_OUTPUT_FUNCTION_STATS_H_
#define NATIVEPROF_OUTPUT_FUNCTION_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "symbolize/profile.h"

namespace nativeprof::output {

struct FunctionCounts {
  std::string name;    // folded display name (with _[k] / _[i] / _[j])
  uint64_t self = 0;   // samples whose leaf frame is this function
  uint64_t total = 0;  // samples with this function anywhere in the stack (counted once per
                       // sample, however deep the recursion)
};

struct FunctionTable {
  uint64_t samples = 0;                  // all samples of the profile
  std::vector<FunctionCounts> functions;  // sorted by name
};

// Counts self and total samples per function name (thread names are not functions).
FunctionTable CountFunctions(const symbolize::Profile& profile);

// CountGroups()
//
// The same counts with frames grouped by `frame_keys` (one key per Profile::frames entry, e.g.
// its module): a group's self is the samples whose leaf frame is in it, its total the samples
// with any of its frames on the stack, counted once per sample however many of its frames the
// stack has. FunctionCounts::name holds the key. CountFunctions is CountGroups by
// FoldedFrameName.
FunctionTable CountGroups(const symbolize::Profile& profile,
                          const std::vector<std::string>& frame_keys);

// 100 * k / n, 0 when n == 0.
inline double Percent(uint64_t k, uint64_t n) { return n == 0 ? 0 : 100.0 * k / n; }

struct Interval {
  double low = 0;
  double high = 0;
};

// The Wilson score interval for a proportion k/n at the two-sided confidence `level`
// (e.g. 0.95). Returns [0, 1] when n == 0.
Interval WilsonInterval(uint64_t k, uint64_t n, double level);

// True when the share k/n is too uncertain to read anything into: its 95% Wilson interval spans
// more than a factor of three (e.g. 2 samples in 100: 0.55% to 7.0%), or k == 0. In practice
// that is about 10 samples or fewer, the usual rule of thumb for sampling profiles.
bool IsNoise(uint64_t k, uint64_t n);

// The standard normal quantile z with P(|Z| <= z) = level (two-sided), e.g. 0.99 -> 2.5758.
double TwoSidedZ(double level);

// z statistic of the two-proportion test for k1/n1 (before) vs k2/n2 (after) with the pooled
// standard error; positive when the share grew. 0 when undefined (no samples, or both shares 0
// or 1).
double TwoProportionZ(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_FUNCTION_STATS_H_
