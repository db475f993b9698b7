// One ELF module's unwind tables: .eh_frame (through .eh_frame_hdr) and .debug_frame (in the file
// itself or in its separate debug file), read through libdw's CFI API from an image opened by
// module/ (this class opens no file: the separate debug file comes from module's finder). Rules
// are compiled into CfiRule once per PC and cached keyed by file offset, so every process mapping
// the module, at any ASLR base, shares them. Owned by one unwinder on the drain thread; not
// thread-safe.
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
#include "module/debug_file_finder.h"
#include "module/elf_image.h"
#include "unwind/cfi_rule.h"

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

  // Reads the unwind tables of `image` (a module file, or the vdso's image). `debug_dirs` are the
  // roots searched for a separate debug file when .eh_frame does not cover a PC. Errors: none
  // so far (an image without CFI yields a table whose Find always returns nullptr).
  static absl::StatusOr<std::unique_ptr<ElfCfi>> FromImage(
      std::unique_ptr<module::ElfImage> image,
      std::vector<std::string> debug_dirs = module::DefaultDebugDirs());

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

  // The image the tables are read from: file offset <-> svma, .eh_frame_hdr and raw bytes.
  const module::ElfImage& image() const { return *image_; }

  const CfiCacheStats& stats() const { return stats_; }
  bool has_cfi() const { return eh_cfi_ != nullptr || debug_cfi_ != nullptr; }

 private:
  ElfCfi() = default;
  // Compiles the CFI row covering `svma`; [*start, *end) is the address range the row covers.
  bool Compile(Dwarf_CFI_s* cfi, uint64_t svma, CfiRule* rule, uint64_t* start, uint64_t* end);
  void OpenDebugFrame();
  const CfiRule* FindSlow(uint64_t file_offset);

  std::unique_ptr<module::ElfImage> image_;
  std::vector<std::string> debug_dirs_;
  Dwarf_CFI_s* eh_cfi_ = nullptr;
  // .debug_frame: from the file itself or its separate debug file (opened lazily on first miss).
  bool debug_tried_ = false;
  std::unique_ptr<module::ElfImage> debug_image_;  // outlives debug_dwarf_
  Dwarf* debug_dwarf_ = nullptr;
  Dwarf_CFI_s* debug_cfi_ = nullptr;

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
  // CFI rows already compiled, by the svma range they cover: a new PC inside a known row reuses
  // it without asking libdw.
  std::map<uint64_t, std::pair<uint64_t, int32_t>> by_range_;  // start -> (end, rules_ index)
  CfiCacheStats stats_;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_ELF_CFI_H_
