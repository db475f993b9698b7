// An exact memo of DWARF unwinds of user stacks. A site that allocates a million times under
// `--alloc=1`, or a thread that blocks in the same call over and over under `--off-cpu`, hands
// the unwinder the same registers and the same stack words again and again, and unwinding them
// again costs most of a sample's processing. An unwind is a function of the size of the stack
// copy, the process's mappings (AddressSpace::generation), the sampled registers it read and
// the stack words it read; so an entry keeps, with the frames it found, which registers it read
// (DwarfRegs::depends: pc and sp always, rbp where it was a frame pointer; not a register that
// only holds a loop counter) and where it read the stack, with their values, and a later sample
// gets those frames only if every one of them holds the same value. A hit gives exactly what
// unwinding again would give.
//
// Bounded: at most kMaxEntries entries and kMaxWords words of reads and frames; when full it
// starts over empty. Storing costs about a quarter of a walk, so while few stacks repeat (CPU
// samples of a computation) only one miss in kSparseStoreEvery is stored. Drain thread only; no
// allocation once its arenas have grown.
#ifndef NATIVEPROF_UNWIND_UNWIND_MEMO_H_
#define NATIVEPROF_UNWIND_UNWIND_MEMO_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "unwind/cfi_rule.h"
#include "unwind/unwinder.h"
#include "unwind/x86_64_regs.h"

namespace nativeprof::unwind {

struct UnwindMemoStats {
  uint64_t hits = 0;
  uint64_t misses = 0;   // no entry for the key (or one for a key of the same hash)
  uint64_t changed = 0;  // an entry for the key, but a word it read differs: unwound again
  uint64_t resets = 0;   // times the memo was full and started over
  uint64_t stored = 0;   // walks memoized
};

class UnwindMemo {
 public:
  // Where an entry is looked for: what every unwind depends on. Of `regs` (as sampled), the
  // validity mask, pc and sp are the key's; the other values are compared as an entry says.
  struct Key {
    int32_t pid = 0;
    uint32_t stack_bytes = 0;  // the copy's size: reads past it fail, which ends the unwind
    uint64_t generation = 0;   // of the address space the unwind looked modules up in
    bool in_syscall = false;   // kernel frames in front (DwarfUnwinder::LeafReturnStep)
    DwarfRegs regs;

    bool SameSlot(const Key& o) const;
  };
  // What one unwind found, besides its frames.
  struct Outcome {
    StackEnd end = StackEnd::kComplete;
    uint64_t stack_high = 0;
    uint64_t caller_cfa = 0;
    UnwinderStats stats;  // the frame counts it added to the unwinder's statistics
    // Set by Store: unique over the memo's life (resets included), never 0.
    uint64_t entry_id = 0;
  };

  static constexpr size_t kMaxEntries = 8192;
  static constexpr size_t kMaxWords = 256 * 1024;
  // Over each window of lookups, fewer hits than 1 in kSparseStoreEvery make the next window
  // store only every kSparseStoreEvery-th miss.
  static constexpr uint32_t kWindow = 4096;
  static constexpr uint32_t kSparseStoreEvery = 8;

  // Appends the frames memoized for `key` to `out->frames` and returns their outcome when the
  // entry's registers and words all match; nullptr otherwise (then walk with the log StartLog
  // gives, and Store the result).
  const Outcome* Replay(const Key& key, const StackCopy& stack, UnwoundStack* out);
  // After a miss: where the unwind about to be walked logs its reads (reset by this call), or
  // nullptr when it is not to be stored.
  StackReadLog* StartLog();
  // Memoizes the unwind of `key` whose used stack words StartLog's log holds, which used the sampled
  // registers in `regs_read` and whose user frames are `out.frames[first_user..]`. Does nothing
  // when the log overflowed.
  void Store(const Key& key, uint32_t regs_read, const StackCopy& stack, const UnwoundStack& out,
             size_t first_user, const Outcome& outcome);

  const UnwindMemoStats& stats() const { return stats_; }
  size_t entries() const { return entries_.size(); }

 private:
  struct Read {
    uint32_t offset;
    uint64_t value;
  };
  struct Entry {
    Key key;
    uint32_t regs_read = 0;  // compared besides the key's own (values in key.regs)
    Outcome outcome;
    uint32_t reads_begin = 0, reads_count = 0;
    uint32_t frames_begin = 0, frames_count = 0;
  };
  static uint64_t HashOf(const Key& key);
  void Reset();

  absl::flat_hash_map<uint64_t, uint32_t> by_hash_;  // HashOf(key) -> index into entries_
  std::vector<Entry> entries_;
  std::vector<Read> reads_;
  std::vector<Frame> frames_;
  StackReadLog log_;
  bool logging_ = false;
  UnwindMemoStats stats_;
  uint32_t window_lookups_ = 0, window_hits_ = 0;
  uint32_t store_every_ = 1;
  uint32_t misses_to_next_store_ = 0;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_UNWIND_MEMO_H_
