#include "unwind/alloc_tracker.h"

#include <cmath>

namespace nativeprof::unwind {

AllocTracker::Weight AllocTracker::SampledWeightOf(uint64_t size) const {
  // P(sampled) = 1 - exp(-size / rate); expm1 keeps small sizes precise.
  const double p = -std::expm1(-static_cast<double>(size) / static_cast<double>(rate_));
  if (p <= 0) return {0.0, 0.0};
  return {static_cast<double>(size) / p, 1.0 / p};
}

void AllocTracker::OnAlloc(uint32_t stack, uint32_t pid, uint64_t block_avma, uint64_t size,
                           uint64_t time_ns) {
  if (stack >= sites_.size()) sites_.resize(static_cast<size_t>(stack) + 1);
  const Weight w = WeightOf(size);
  AllocSite& site = sites_[stack];
  site.bytes += w.bytes;
  site.count += w.count;
  ++site.samples;
  site.live_bytes += w.bytes;
  site.live_count += w.count;
  // An ended image's block at this address is gone for certain: the address is this pid's again.
  if (!ended_.empty()) {
    if (auto image = ended_.find(pid); image != ended_.end()) image->second.blocks.erase(block_avma);
  }
  // An address that is live again was freed without a record (a lost sample): forget it.
  auto [it, inserted] =
      live_.try_emplace(BlockKey{block_avma, pid}, LiveBlock{stack, w.bytes, w.count, time_ns});
  if (!inserted) {
    AllocSite& stale = sites_[it->second.stack];
    stale.live_bytes -= it->second.bytes;
    stale.live_count -= it->second.count;
    live_bytes_ -= it->second.bytes;
    it->second = LiveBlock{stack, w.bytes, w.count, time_ns};
  }
  live_bytes_ += w.bytes;
  if (live_bytes_ > peak_bytes_) {
    peak_bytes_ = live_bytes_;
    peak_time_ns_ = time_ns;
    peak_pending_ = !peak_marked_;
  }
}

void AllocTracker::OnFree(uint32_t pid, uint64_t block_avma, bool temporary, uint64_t time_ns) {
  auto it = live_.find(BlockKey{block_avma, pid});
  if (it == live_.end()) {
    if (auto image = ended_.find(pid); image != ended_.end()) {
      if (auto ended = image->second.blocks.find(block_avma); ended != image->second.blocks.end()) {
        FreeEnded(ended->second, temporary, time_ns);
        image->second.blocks.erase(ended);
        return;
      }
    }
    ++(forked_.contains(pid) ? inherited_frees_ : unmatched_frees_);
    return;
  }
  SnapshotBeforeDrop();
  // Counted in place, then erased: a copy of the block, read back at once, stalled on store
  // forwarding (a tenth of the drain's frees).
  const LiveBlock& b = it->second;
  AllocSite& site = sites_[b.stack];
  site.live_bytes -= b.bytes;
  site.live_count -= b.count;
  CountFreed(site, b, temporary, time_ns);
  live_bytes_ -= b.bytes;
  live_.erase(it);
}

void AllocTracker::OnPeakMark(uint64_t time_ns) {
  peak_marked_ = true;
  mark_time_ns_ = time_ns;
  TakePeakSnapshot();
}

void AllocTracker::OnProcessForked(uint32_t child) { forked_.insert(child); }

void AllocTracker::OnImageEnded(uint32_t pid, uint64_t time_ns) {
  // Images that ended over kLateFreeNs ago get no more frees: only their totals (in the sites)
  // are kept, so a run of many processes holds the blocks of those still running.
  for (auto it = ended_.begin(); it != ended_.end();) {
    if (time_ns > it->second.time_ns + kLateFreeNs) {
      ended_.erase(it++);
    } else {
      ++it;
    }
  }
  forked_.erase(pid);  // a new image inherits no block
  SnapshotBeforeDrop();
  EndedImage& image = ended_[pid];
  image.time_ns = time_ns;
  for (auto it = live_.begin(); it != live_.end();) {
    if (it->first.pid != pid) {
      ++it;
      continue;
    }
    const LiveBlock& b = it->second;
    AllocSite& site = sites_[b.stack];
    site.live_bytes -= b.bytes;
    site.live_count -= b.count;
    site.ended_bytes += b.bytes;
    site.ended_count += b.count;
    live_bytes_ -= b.bytes;
    image.blocks.insert_or_assign(it->first.avma, b);
    live_.erase(it++);
  }
  if (image.blocks.empty()) ended_.erase(pid);
}

size_t AllocTracker::ended_blocks() const {
  size_t n = 0;
  for (const auto& [pid, image] : ended_) n += image.blocks.size();
  return n;
}

void AllocTracker::FreeEnded(const LiveBlock& b, bool temporary, uint64_t time_ns) {
  AllocSite& site = sites_[b.stack];
  site.ended_bytes -= b.bytes;
  site.ended_count -= b.count;
  CountFreed(site, b, temporary, time_ns);
}

void AllocTracker::CountFreed(AllocSite& site, const LiveBlock& b, bool temporary,
                              uint64_t time_ns) {
  site.freed += b.count;
  if (temporary) site.temporary += b.count;
  site.lifetime_ns += b.count * static_cast<double>(time_ns > b.time_ns ? time_ns - b.time_ns : 0);
}

void AllocTracker::Finish() {
  if (peak_pending_ && live_bytes_ >= snapshot_bytes_) TakePeakSnapshot();
  for (AllocSite& s : sites_) {
    s.live_bytes += s.ended_bytes;
    s.live_count += s.ended_count;
    s.ended_bytes = 0;
    s.ended_count = 0;
  }
}

void AllocTracker::SnapshotBeforeDrop() {
  // The live set is at a local maximum right before it drops (a free, an image's end): the
  // moment to copy it if it is the peak. Copies only when the peak grew by over 0.5 % since the
  // last copy, which bounds the copies in a growing program at the cost of a peak up to 0.5 %
  // older than the true one.
  if (peak_pending_ && peak_bytes_ > snapshot_bytes_ * 1.005) TakePeakSnapshot();
}

void AllocTracker::TakePeakSnapshot() {
  for (AllocSite& s : sites_) {
    s.peak_bytes = s.live_bytes;
    s.peak_count = s.live_count;
  }
  snapshot_bytes_ = live_bytes_;
  peak_pending_ = false;
}

}  // namespace nativeprof::unwind
