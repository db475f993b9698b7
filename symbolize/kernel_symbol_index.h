// The on-disk form of the kernel symbols that stay put until the next boot (KernelSymbols keeps one
// per boot in the cache): the address ranges it is authoritative for, then each symbol's start and
// name, sorted by address. Built once per boot from /proc/kallsyms and read in place from a
// mapped cache file by every later profile, so it is laid out for lookups that touch a handful of
// pages: 8-byte starts, 4-byte name offsets, NUL-terminated names, and the "__pfx_NAME" padding
// symbols of recent kernels (nearly half of all) sharing their name bytes with NAME.
// Pure data; building and lookups may run on any thread.
#ifndef NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOL_INDEX_H_
#define NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOL_INDEX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

// One symbol to index. `name` must stay valid until SerializeKernelSymbols returns.
struct KernelSymbolInput {
  uint64_t start = 0;
  absl::string_view name;
  uint8_t rank = 0;  // alias preference (SymbolTable::AliasRank); the highest wins per address
};

struct KernelRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

// The image of `symbols` (any order, aliases allowed: one name per address is kept, chosen as
// SymbolTable::Finish chooses) and the sorted `ranges`. Each symbol reaches to the next one's
// start; the last one covers kKernelLastSymbolSpan bytes. Sorts `symbols` in place.
std::string SerializeKernelSymbols(const std::vector<KernelRange>& ranges,
                                   std::vector<KernelSymbolInput>* symbols);

// A SerializeKernelSymbols image used in place; the bytes must outlive the index. Opening checks
// the header, sizes and range order only; a record damaged on disk can yield a wrong name or
// none, never a read outside the bytes.
class KernelSymbolIndex {
 public:
  // nullopt when `bytes` is not a well-formed image (magic, sizes, unsorted ranges).
  static std::optional<KernelSymbolIndex> Open(absl::string_view bytes);

  // Whether `avma` lies in one of the ranges this index is authoritative for.
  bool InRange(uint64_t avma) const;
  // The name of the symbol covering `avma`; empty when none does.
  absl::string_view Lookup(uint64_t avma) const;
  size_t size() const { return count_; }

 private:
  uint64_t Start(size_t i) const;

  const char* ranges_ = nullptr;
  size_t range_count_ = 0;
  const char* starts_ = nullptr;
  const char* name_offsets_ = nullptr;
  size_t count_ = 0;
  absl::string_view names_;
};

// How far the last symbol of an index reaches (as SymbolTable bounds a size-less symbol with
// nothing after it).
inline constexpr uint64_t kKernelLastSymbolSpan = 4096;

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOL_INDEX_H_
