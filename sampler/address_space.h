// The address-space model of one process: which file is mapped where, built from MMAP2 records
// (and /proc/PID/maps when attaching). Maps a sampled address (avma) to (module, file offset).
// Owned by the drain thread. Mapping pointers stay valid until the mapping is replaced, removed
// or the process execs; generation() changes whenever that may have happened, so caches keyed on
// Mapping* (unwinder state) check it.
#ifndef NATIVEPROF_SAMPLER_ADDRESS_SPACE_H_
#define NATIVEPROF_SAMPLER_ADDRESS_SPACE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace nativeprof::sampler {

// Identifies a mapped file across processes: the same (dev, inode, path, build-id) in two
// processes is one module, so symbol and unwind tables are loaded once. Index into ModuleRegistry.
using ModuleId = uint32_t;
inline constexpr ModuleId kNoModule = 0xffffffffu;

struct Mapping {
  uint64_t start_avma = 0;
  uint64_t end_avma = 0;     // exclusive
  uint64_t file_offset = 0;  // file offset that start_avma maps
  uint32_t prot = 0;
  ModuleId module = kNoModule;

  // File offset of `avma` (which must lie in [start_avma, end_avma)).
  uint64_t FileOffset(uint64_t avma) const { return avma - start_avma + file_offset; }
};

class AddressSpace {
 public:
  AddressSpace() = default;
  // Copies (fork) and moves start with an empty lookup cache: it points into its own map.
  AddressSpace(const AddressSpace& other)
      : by_start_(other.by_start_), generation_(other.generation_) {}
  AddressSpace(AddressSpace&& other) noexcept
      : by_start_(std::move(other.by_start_)), generation_(other.generation_) {
    other.last_ = nullptr;
  }
  AddressSpace& operator=(const AddressSpace& other) {
    if (this != &other) {
      by_start_ = other.by_start_;
      generation_ = other.generation_;
      last_ = nullptr;
    }
    return *this;
  }
  AddressSpace& operator=(AddressSpace&& other) noexcept {
    if (this != &other) {
      by_start_ = std::move(other.by_start_);
      generation_ = other.generation_;
      last_ = nullptr;
      other.last_ = nullptr;
    }
    return *this;
  }

  // Inserts a mapping; any part of older mappings it overlaps is cut away (mmap replaces pages).
  void Map(const Mapping& mapping);
  // Removes [start, end) from every mapping (munmap is not reported by perf, but exec and
  // overlapping maps are; kept for /proc/PID/maps refreshes).
  void Unmap(uint64_t start_avma, uint64_t end_avma);
  // Forgets everything (execve).
  void Clear();

  // The mapping containing `avma`, or nullptr. O(1) when it is the mapping the previous call
  // found (consecutive frames and samples mostly are), else O(log n).
  const Mapping* Find(uint64_t avma) const {
    if (last_ != nullptr && avma - last_->start_avma < last_->end_avma - last_->start_avma) {
      return last_;
    }
    return FindSlow(avma);
  }

  // Unique over every AddressSpace of the process (0 for one that never had a mapping).
  uint64_t generation() const { return generation_; }
  size_t size() const { return by_start_.size(); }
  // Iterates mappings in address order.
  const std::map<uint64_t, Mapping>& mappings() const { return by_start_; }

 private:
  const Mapping* FindSlow(uint64_t avma) const;
  static uint64_t NextGeneration();

  std::map<uint64_t, Mapping> by_start_;  // start_avma -> mapping, non-overlapping
  uint64_t generation_ = 0;
  // The mapping the last Find returned; reset by every change to by_start_. Drain thread only.
  mutable const Mapping* last_ = nullptr;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_ADDRESS_SPACE_H_
