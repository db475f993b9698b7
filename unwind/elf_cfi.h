// One ELF module's unwind tables: .eh_frame (through .eh_frame_hdr) and .debug_frame (in the file
// itself or in its separate debug file), read through libdw's CFI API, plus the program headers
// that turn a file offset into an ELF virtual address. Rules are compiled into CfiRule once per
// PC and cached keyed by file offset, so every process mapping the module, at any ASLR base,
// shares them. Owned by one unwinder on the drain thread; not thread-safe.
#ifndef NATIVEPROF_UNWIND_ELF_CFI_H_
#define NATIVEPROF_UNWIND_ELF_CFI_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "unwind/cfi_rule.h"

struct Elf;
struct Dwarf;
struct Dwarf_CFI_s;

namespace nativeprof::unwind {

// Lookup statistics, for benchmarks and debugging.
struct CfiCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // not in the per-offset cache
  uint64_t range_hits = 0;  // misses served by an already compiled row (no libdw call)
  uint64_t fast_rules = 0;
  uint64_t expr_rules = 0;
  uint64_t no_cfi = 0;
};

class ElfCfi {
 public:
  ~ElfCfi();
  ElfCfi(const ElfCfi&) = delete;
  ElfCfi& operator=(const ElfCfi&) = delete;

  // Opens the ELF file at `path`. `build_id` (hex, may be empty) helps find a separate debug file
  // for .debug_frame. Errors: kNotFound / kPermissionDenied from open, kInvalidArgument when the
  // file is not an ELF file.
  static absl::StatusOr<std::unique_ptr<ElfCfi>> Open(const std::string& path,
                                                      const std::string& build_id);
  // Uses an in-memory ELF image (the vdso read from a live process). Errors: kInvalidArgument.
  static absl::StatusOr<std::unique_ptr<ElfCfi>> FromImage(std::string image);

  // The rule for the instruction at `file_offset`, or nullptr if no CFI covers it. Cached.
  const CfiRule* Find(uint64_t file_offset) {
    // Inline: called for every frame, and almost always answered by recent_.
    const RecentSlot& slot = recent_[RecentSlotOf(file_offset)];
    if (slot.file_offset == file_offset) {
      ++stats_.hits;
      return slot.index < 0 ? nullptr : &rules_[slot.index];
    }
    return FindSlow(file_offset);
  }
  // Expression operations referred to by rules of this module.
  std::span<const CfiOp> ops() const { return ops_; }

  // ELF virtual address of a file offset, through the PT_LOAD headers. False if no segment maps
  // it.
  bool FileOffsetToVaddr(uint64_t file_offset, uint64_t* vaddr) const;
  // File offset of an ELF virtual address. False if no segment maps it.
  bool VaddrToFileOffset(uint64_t vaddr, uint64_t* file_offset) const;

  // Address (vaddr), file offset and size of .eh_frame_hdr, for the libunwind backend. False if
  // the module has none.
  bool EhFrameHdr(uint64_t* vaddr, uint64_t* file_offset, uint64_t* size) const;
  // Raw bytes of the file (or image) at [file_offset, file_offset + size), or empty.
  std::span<const uint8_t> Bytes(uint64_t file_offset, uint64_t size) const;

  const CfiCacheStats& stats() const { return stats_; }
  bool has_cfi() const { return eh_cfi_ != nullptr || debug_cfi_ != nullptr; }

 private:
  struct Segment {
    uint64_t offset, vaddr, filesz;
  };
  ElfCfi() = default;
  absl::Status Init();
  // Compiles the CFI row covering `vaddr`; [*start, *end) is the address range the row covers.
  bool Compile(Dwarf_CFI_s* cfi, uint64_t vaddr, CfiRule* rule, uint64_t* start, uint64_t* end);
  void OpenDebugFrame();
  const CfiRule* FindSlow(uint64_t file_offset);

  std::string path_;
  std::string build_id_;
  ScopedFd fd_;
  ScopedMmap map_;         // whole file, read-only
  std::string image_;      // for FromImage
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Elf* elf_ = nullptr;
  Dwarf_CFI_s* eh_cfi_ = nullptr;
  // .debug_frame: from the file itself or its separate debug file (opened lazily on first miss).
  bool debug_tried_ = false;
  ScopedFd debug_fd_;
  Elf* debug_elf_ = nullptr;
  Dwarf* debug_dwarf_ = nullptr;
  Dwarf_CFI_s* debug_cfi_ = nullptr;
  std::vector<Segment> segments_;
  uint64_t eh_hdr_vaddr_ = 0, eh_hdr_offset_ = 0, eh_hdr_size_ = 0;

  // Direct-mapped cache in front of by_offset_: a hot PC costs one multiply and one load instead
  // of a hash probe that often misses the CPU cache.
  struct RecentSlot {
    uint64_t file_offset = ~uint64_t{0};
    int32_t index = -1;
  };
  static constexpr int kRecentBits = 10;
  static size_t RecentSlotOf(uint64_t file_offset) {
    return static_cast<size_t>((file_offset * 0x9e3779b97f4a7c15ull) >> (64 - kRecentBits));
  }

  std::vector<CfiRule> rules_;
  std::vector<CfiOp> ops_;
  std::vector<RecentSlot> recent_ = std::vector<RecentSlot>(size_t{1} << kRecentBits);
  absl::flat_hash_map<uint64_t, int32_t> by_offset_;  // file offset -> rules_ index, -1: none
  // CFI rows already compiled, by the vaddr range they cover: a new PC inside a known row reuses
  // it without asking libdw.
  std::map<uint64_t, std::pair<uint64_t, int32_t>> by_range_;  // start -> (end, rules_ index)
  CfiCacheStats stats_;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_ELF_CFI_H_
