// The per-call-site side of `record --alloc`: turns the preload's sampled allocations and the
// frees of sampled blocks (in time order) into estimates per collected stack of bytes and
// allocations, temporary allocations, average lifetime, what was live at the sampled live heap's
// peak (dhat's t-gmax) and what is still live at the end (leaks). Each sample is weighted by the
// inverse of its sampling probability, 1 / (1 - exp(-size / rate)) for Poisson sampling by bytes
// (as tcmalloc does), which makes every estimate unbiased; with rate 1 every allocation is
// sampled and the figures are exact counts. Drain thread only; memory grows with the number of
// sampled blocks live at once.
#ifndef NATIVEPROF_UNWIND_ALLOC_TRACKER_H_
#define NATIVEPROF_UNWIND_ALLOC_TRACKER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace nativeprof::unwind {

// Estimates for one collected stack (an allocation site in one thread).
struct AllocSite {
  double bytes = 0;          // allocated
  double count = 0;          // allocations
  uint64_t samples = 0;      // sampled allocations behind the estimates
  double temporary = 0;      // allocations freed before their thread allocated again
  double freed = 0;          // allocations freed while recording
  double lifetime_ns = 0;    // sum over freed allocations of their lifetime (count-weighted)
  double live_bytes = 0;     // now; at the end of recording: leaked
  double live_count = 0;
  double peak_bytes = 0;     // live at the sampled live heap's peak
  double peak_count = 0;
};

class AllocTracker {
 public:
  // `rate_bytes`: the preload's mean sampling distance; <= 1 means every allocation.
  explicit AllocTracker(uint64_t rate_bytes = 1) : rate_(rate_bytes) {}
  void set_rate(uint64_t rate_bytes) { rate_ = rate_bytes; }
  uint64_t rate() const { return rate_; }

  void OnAlloc(uint32_t stack, uint64_t block_avma, uint64_t size, uint64_t time_ns);
  void OnFree(uint64_t block_avma, bool temporary, uint64_t time_ns);
  // Once the last record is in: settles the peak snapshot.
  void Finish();

  // Indexed by collected stack; stacks of other kinds have zero entries (or none at the end).
  const std::vector<AllocSite>& sites() const { return sites_; }
  uint64_t unmatched_frees() const { return unmatched_frees_; }
  // The estimated live heap at its peak, and when that was.
  double peak_bytes() const { return peak_bytes_; }
  uint64_t peak_time_ns() const { return peak_time_ns_; }


  // The weight of one sampled allocation of `size` bytes (how many bytes / allocations it
  // stands for); public for the tests.
  struct Weight {
    double bytes;
    double count;
  };
  Weight WeightOf(uint64_t size) const;

 private:
  struct LiveBlock {
    uint32_t stack;
    double bytes;
    double count;
    uint64_t time_ns;
  };
  void TakePeakSnapshot();

  uint64_t rate_;
  std::vector<AllocSite> sites_;
  absl::flat_hash_map<uint64_t, LiveBlock> live_;
  double live_bytes_ = 0;
  double peak_bytes_ = 0;
  uint64_t peak_time_ns_ = 0;
  double snapshot_bytes_ = 0;  // live_bytes_ when the per-site peak figures were copied
  bool peak_pending_ = false;  // a new peak was reached after the last snapshot
  uint64_t unmatched_frees_ = 0;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_ALLOC_TRACKER_H_
