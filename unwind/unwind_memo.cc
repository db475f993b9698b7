#include "unwind/unwind_memo.h"

#include <cstring>

#include "absl/types/span.h"

namespace nativeprof::unwind {

bool UnwindMemo::Key::SameSlot(const Key& o) const {
  return pid == o.pid && stack_bytes == o.stack_bytes && generation == o.generation &&
         in_syscall == o.in_syscall && regs.valid == o.regs.valid && regs.pc() == o.regs.pc() &&
         regs.sp() == o.regs.sp();
}

uint64_t UnwindMemo::HashOf(const Key& key) {
  // Looked up once per stack: fold the seven fields with two multiplies rather than a hash-state
  // round per field (absl::HashOf took ~5 % of an --alloc=1 drain). The map hashes the result
  // again, so this only needs to keep distinct keys apart, not to spread them.
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  const uint64_t small = (uint64_t{static_cast<uint32_t>(key.pid)} << 32 | key.stack_bytes) ^
                         (key.generation << 20) ^ key.regs.valid ^
                         (uint64_t{key.in_syscall} << 63);
  const uint64_t h = (key.regs.pc() ^ small) * kMul;
  return (h ^ (h >> 29) ^ key.regs.sp()) * kMul;
}

const UnwindMemo::Outcome* UnwindMemo::Replay(const Key& key, const StackCopy& stack,
                                              UnwoundStack* out) {
  if (++window_lookups_ == kWindow) {
    store_every_ = window_hits_ * kSparseStoreEvery < window_lookups_ ? kSparseStoreEvery : 1;
    window_lookups_ = window_hits_ = 0;
  }
  auto it = by_hash_.find(HashOf(key));
  if (it == by_hash_.end() || !entries_[it->second].key.SameSlot(key)) {
    ++stats_.misses;
    return nullptr;
  }
  const Entry& e = entries_[it->second];
  // The walk stops at kMaxFrames counting the kernel frames in front: with more of them than the
  // stored walk had, a walk might stop earlier than the stored frames do.
  if (out->frames.size() + e.frames_count >= kMaxFrames) {
    ++stats_.misses;
    return nullptr;
  }
  for (uint32_t rest = e.regs_read; rest != 0; rest &= rest - 1) {
    const int r = __builtin_ctz(rest);
    if (e.key.regs.value[r] != key.regs.value[r]) {
      ++stats_.changed;
      return nullptr;
    }
  }
  // The key holds the copy's size, so every logged offset is inside this copy too.
  const uint8_t* bytes = stack.bytes.data();
  for (uint32_t i = e.reads_begin; i < e.reads_begin + e.reads_count; ++i) {
    uint64_t now;
    std::memcpy(&now, bytes + reads_[i].offset, sizeof(now));
    if (now != reads_[i].value) {
      ++stats_.changed;
      return nullptr;
    }
  }
  out->frames.insert(out->frames.end(), frames_.begin() + e.frames_begin,
                     frames_.begin() + e.frames_begin + e.frames_count);
  ++stats_.hits;
  ++window_hits_;
  return &e.outcome;
}

StackReadLog* UnwindMemo::StartLog() {
  logging_ = misses_to_next_store_ == 0;
  misses_to_next_store_ = logging_ ? store_every_ - 1 : misses_to_next_store_ - 1;
  if (!logging_) return nullptr;
  log_.Reset();
  return &log_;
}

void UnwindMemo::Store(const Key& key, uint32_t regs_read, const StackCopy& stack,
                       const UnwoundStack& out, size_t first_user, const Outcome& outcome) {
  if (!logging_ || log_.overflow || out.frames.size() < first_user ||
      outcome.end == StackEnd::kMaxDepth) {
    return;
  }
  logging_ = false;
  ++stats_.stored;
  const size_t frame_count = out.frames.size() - first_user;
  if (entries_.size() >= kMaxEntries || reads_.size() + log_.count > kMaxWords ||
      frames_.size() + frame_count > kMaxWords) {
    Reset();
  }
  Entry e;
  e.key = key;
  e.regs_read = regs_read;
  e.outcome = outcome;
  e.outcome.entry_id = stats_.stored;
  e.reads_begin = static_cast<uint32_t>(reads_.size());
  e.reads_count = log_.count;
  for (uint32_t i = 0; i < log_.count; ++i) {
    const uint32_t offset = log_.offsets[i];
    uint64_t value;
    std::memcpy(&value, stack.bytes.data() + offset, sizeof(value));
    reads_.push_back({offset, value});
  }
  e.frames_begin = static_cast<uint32_t>(frames_.size());
  e.frames_count = static_cast<uint32_t>(frame_count);
  frames_.insert(frames_.end(), out.frames.begin() + first_user, out.frames.end());
  // An entry replaced for the same hash leaves its words behind in the arenas until the next
  // reset: cheaper than compacting, and bounded by kMaxWords.
  auto [it, inserted] = by_hash_.try_emplace(HashOf(key), static_cast<uint32_t>(entries_.size()));
  if (inserted) {
    entries_.push_back(e);
  } else {
    entries_[it->second] = e;
  }
}

void UnwindMemo::Reset() {
  by_hash_.clear();
  entries_.clear();
  reads_.clear();
  frames_.clear();
  ++stats_.resets;
}

}  // namespace nativeprof::unwind
