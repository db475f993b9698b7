#include "sampler/address_space.h"

#include <atomic>

namespace nativeprof::sampler {
namespace {

// One counter for every address space, so a generation names one state of one process's
// mappings: a space made for a reused pid, or a copy that then changes, never repeats a
// generation another space had (caches keyed on it need not know which space it came from).
std::atomic<uint64_t> g_last_generation{0};

}  // namespace

uint64_t AddressSpace::NextGeneration() {
  return g_last_generation.fetch_add(1, std::memory_order_relaxed) + 1;
}

void AddressSpace::Map(const Mapping& mapping) {
  if (mapping.end_avma <= mapping.start_avma) return;
  Unmap(mapping.start_avma, mapping.end_avma);
  last_ = nullptr;
  by_start_.emplace(mapping.start_avma, mapping);
  generation_ = NextGeneration();
}

void AddressSpace::Unmap(uint64_t start, uint64_t end) {
  if (end <= start || by_start_.empty()) return;
  last_ = nullptr;
  auto it = by_start_.upper_bound(start);
  if (it != by_start_.begin()) --it;
  bool changed = false;
  while (it != by_start_.end() && it->second.start_avma < end) {
    Mapping old = it->second;
    if (old.end_avma <= start) {
      ++it;
      continue;
    }
    it = by_start_.erase(it);
    changed = true;
    // Keep the parts of the old mapping outside [start, end).
    if (old.start_avma < start) {
      Mapping head = old;
      head.end_avma = start;
      by_start_.emplace(head.start_avma, head);
    }
    if (old.end_avma > end) {
      Mapping tail = old;
      tail.file_offset = old.file_offset + (end - old.start_avma);
      tail.start_avma = end;
      it = by_start_.emplace(tail.start_avma, tail).first;
      ++it;
    }
  }
  if (changed) generation_ = NextGeneration();
}

void AddressSpace::Clear() {
  by_start_.clear();
  last_ = nullptr;
  generation_ = NextGeneration();
}

const Mapping* AddressSpace::FindSlow(uint64_t avma) const {
  auto it = by_start_.upper_bound(avma);
  if (it == by_start_.begin()) return nullptr;
  --it;
  if (avma >= it->second.end_avma) return nullptr;
  last_ = &it->second;
  return last_;
}

}  // namespace nativeprof::sampler
