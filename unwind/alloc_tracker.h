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
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace nativeprof::unwind {

// Estimates for one collected stack (an allocation site in one thread).
struct AllocSite {
  double bytes = 0;          // allocated
  double count = 0;          // allocations
  uint64_t samples = 0;      // sampled allocations behind the estimates
  double temporary = 0;      // allocations freed before their thread allocated again
  double freed = 0;          // allocations freed while recording
  double lifetime_ns = 0;    // sum over freed allocations of their lifetime (count-weighted)
  double live_bytes = 0;     // now; after Finish(): leaked (with what ended images left)
  double live_count = 0;
  double ended_bytes = 0;    // live when their process's image ended (exec, exit): its leak,
  double ended_count = 0;    // until Finish() adds it to live_*
  double peak_bytes = 0;     // live at the sampled live heap's peak
  double peak_count = 0;
};

class AllocTracker {
 public:
  // `rate_bytes`: the preload's mean sampling distance; <= 1 means every allocation.
  explicit AllocTracker(uint64_t rate_bytes = 1) : rate_(rate_bytes) {}
  void set_rate(uint64_t rate_bytes) { rate_ = rate_bytes; }
  uint64_t rate() const { return rate_; }

  // Blocks are per process: two processes (a fork's parent and child) reuse each other's
  // addresses.
  void OnAlloc(uint32_t stack, uint32_t pid, uint64_t block_avma, uint64_t size,
               uint64_t time_ns);
  void OnFree(uint32_t pid, uint64_t block_avma, bool temporary, uint64_t time_ns);
  // The run's exact live heap reached a new peak (the preload's mark, written while sampling by
  // bytes): the sampled live set per site is copied now, at the exact peak's moment, and no
  // longer at the highest point of the sampled estimate, which noise pushes up.
  void OnPeakMark(uint64_t time_ns);
  // Process `child` was forked: its frees of blocks it inherited (sampled in its parent before
  // the fork) are frees of copies, not unmatched ones, and leave the parent's blocks live.
  void OnProcessForked(uint32_t child);
  // Process `pid`'s image ended (it exec'd, or its main thread exited): its live blocks are gone
  // with it. They stay in the leaked figures (that image never freed them) but leave the live
  // heap, so a later peak of the processes still running does not count them, and their
  // addresses are free for a new image. A free of one that comes up to kLateFreeNs after
  // (another thread's, in the moment before it died too) still finds it.
  void OnImageEnded(uint32_t pid, uint64_t time_ns);
  static constexpr uint64_t kLateFreeNs = 1'000'000'000;
  // Once the last record is in: settles the peak snapshot.
  void Finish();

  // Indexed by collected stack; stacks of other kinds have zero entries (or none at the end).
  const std::vector<AllocSite>& sites() const { return sites_; }
  uint64_t unmatched_frees() const { return unmatched_frees_; }
  // Frees in a forked child of blocks sampled in its parent before the fork.
  uint64_t inherited_frees() const { return inherited_frees_; }
  // Blocks of ended images still kept for a late free (for the tests).
  size_t ended_blocks() const;
  // The estimated live heap at its peak, and when that was.
  double peak_bytes() const { return peak_bytes_; }
  uint64_t peak_time_ns() const { return peak_time_ns_; }
  // When the exact live heap reached its peak, as near as the records tell: the last peak mark,
  // or without marks (--alloc=1, where the sampled live heap is the exact one) the sampled
  // peak's time. 0 when nothing was sampled.
  uint64_t exact_peak_time_ns() const { return peak_marked_ ? mark_time_ns_ : peak_time_ns_; }


  // The weight of one sampled allocation of `size` bytes (how many bytes / allocations it
  // stands for); public for the tests.
  struct Weight {
    double bytes;
    double count;
  };
  // Inline for --alloc=1's weights: a Weight returned from a call came back through the stack,
  // where adding it to a site's two figures at once stalled on store forwarding (a third of
  // OnAlloc's time).
  Weight WeightOf(uint64_t size) const {
    if (rate_ <= 1) return {static_cast<double>(size), 1.0};
    return SampledWeightOf(size);
  }

 private:
  Weight SampledWeightOf(uint64_t size) const;
  struct LiveBlock {
    uint32_t stack;
    double bytes;
    double count;
    uint64_t time_ns;
  };
  struct BlockKey {
    uint64_t avma;
    uint32_t pid;
    bool operator==(const BlockKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const BlockKey& k) {
      return H::combine(std::move(h), k.avma, k.pid);
    }
  };
  void TakePeakSnapshot();
  void SnapshotBeforeDrop();
  void FreeEnded(const LiveBlock& b, bool temporary, uint64_t time_ns);
  void CountFreed(AllocSite& site, const LiveBlock& b, bool temporary, uint64_t time_ns);


  uint64_t rate_;
  std::vector<AllocSite> sites_;
  absl::flat_hash_map<BlockKey, LiveBlock> live_;
  // The blocks each recently ended image left live (by address), and when it ended.
  struct EndedImage {
    uint64_t time_ns = 0;
    absl::flat_hash_map<uint64_t, LiveBlock> blocks;
  };
  absl::flat_hash_map<uint32_t, EndedImage> ended_;
  // Forked processes (until they exec): a sampled block's free with no block of its own in such
  // an image is of a block copied at the fork (or one whose allocation record was lost, which
  // lost_samples counts).
  absl::flat_hash_set<uint32_t> forked_;
  double live_bytes_ = 0;
  double peak_bytes_ = 0;
  uint64_t peak_time_ns_ = 0;
  uint64_t mark_time_ns_ = 0;  // of the last peak mark
  double snapshot_bytes_ = 0;  // live_bytes_ when the per-site peak figures were copied
  bool peak_pending_ = false;  // a new peak was reached after the last snapshot
  bool peak_marked_ = false;   // snapshots follow the preload's peak marks
  uint64_t unmatched_frees_ = 0;
  uint64_t inherited_frees_ = 0;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_ALLOC_TRACKER_H_
