// `nativeprof diff`: which functions' self/total shares changed between two profiles, each
// change tested with a two-proportion z-test (shares, so profiles of different lengths compare),
// as a text table and a differential flame graph. Pure functions; any thread.
#ifndef NATIVEPROF_OUTPUT_DIFF_REPORT_H_
#define NATIVEPROF_OUTPUT_DIFF_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "symbolize/profile.h"

namespace nativeprof::output {

struct FunctionChange {
  std::string name;
  uint64_t self_before = 0, self_after = 0;
  uint64_t total_before = 0, total_after = 0;
  double self_delta = 0;   // after share - before share, as a fraction of all samples
  double total_delta = 0;
  double self_z = 0;       // two-proportion z statistics
  double total_z = 0;
  bool self_significant = false;   // |z| above the level's critical value
  bool total_significant = false;
  bool significant() const { return self_significant || total_significant; }
};

struct DiffResult {
  uint64_t before_samples = 0;
  uint64_t after_samples = 0;
  double level = 0.99;
  double critical_z = 0;
  // "samples", or "us" for off-CPU/wall time profiles: their counts are measured time, not
  // independent samples, so no change is marked significant (the test does not apply).
  std::string count_unit = "samples";
  std::vector<FunctionChange> changes;  // every function in either profile, by decreasing
                                        // max(|self_delta|, |total_delta|), then name
};

// Compares the function shares of two profiles at the two-sided confidence `level` (0 < level < 1).
DiffResult DiffProfiles(const symbolize::Profile& before, const symbolize::Profile& after,
                        double level);

// The table of the `top_n` largest changes, with a header line and a legend.
std::string RenderDiffTable(const DiffResult& diff, size_t top_n);

// Differential flame graph: widths from AFTER; red = the frame's share of all samples grew,
// blue = shrank, intensity relative to the largest change.
std::string RenderDiffSvg(const symbolize::Profile& before, const symbolize::Profile& after,
                          const std::string& title);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_DIFF_REPORT_H_
