// libFuzzer target for the kernel symbol index (symbolize/kernel_symbol_index.h), the format of
// the per-boot kernel cache entry that every later profile maps and reads in place:
//   1. arbitrary bytes opened as an index must never be read outside, whatever they claim;
//   2. arbitrary symbols (aliases, "__pfx_" padding pairs, any order) serialized and opened again
//      must name every address as a plain reference does: the best alias per address (rank, then
//      the shorter name, then the smaller), reaching to the next symbol's start, the last one
//      kKernelLastSymbolSpan bytes.
// Seeds (corpus/kernel_symbol_index_fuzzer/): seed-index, an image of a few symbols and two ranges.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "symbolize/kernel_symbol_index.h"

namespace {

using nativeprof::symbolize::KernelRange;
using nativeprof::symbolize::KernelSymbolIndex;
using nativeprof::symbolize::KernelSymbolInput;
using nativeprof::symbolize::kKernelLastSymbolSpan;

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void CheckInBounds(absl::string_view bytes, absl::string_view name) {
  if (name.empty()) return;
  if (name.data() < bytes.data() || name.data() + name.size() > bytes.data() + bytes.size()) {
    std::abort();
  }
}

// What the index must answer for `avma`, from the symbols directly.
std::string Reference(const std::vector<KernelSymbolInput>& symbols, uint64_t avma) {
  const KernelSymbolInput* best = nullptr;
  uint64_t next = 0;  // the smallest start above best's
  bool has_next = false;
  for (const KernelSymbolInput& s : symbols) {
    if (s.name.empty() || s.start > avma) continue;
    if (best == nullptr || s.start > best->start) {
      best = &s;
    } else if (s.start == best->start) {
      const bool better = s.rank != best->rank ? s.rank > best->rank
                          : s.name.size() != best->name.size() ? s.name.size() < best->name.size()
                                                               : s.name < best->name;
      if (better) best = &s;
    }
  }
  if (best == nullptr) return "";
  for (const KernelSymbolInput& s : symbols) {
    if (!s.name.empty() && s.start > best->start && (!has_next || s.start < next)) {
      next = s.start;
      has_next = true;
    }
  }
  if (!has_next && avma - best->start >= kKernelLastSymbolSpan) return "";
  return std::string(best->name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);

  // 1. The bytes as an image.
  if (std::optional<KernelSymbolIndex> index = KernelSymbolIndex::Open(bytes)) {
    for (size_t at = 0; at + 8 <= size && at < 64 * 8; at += 8) {
      const uint64_t avma = Load64(data + at);
      (void)index->InRange(avma);
      CheckInBounds(bytes, index->Lookup(avma));
      CheckInBounds(bytes, index->Lookup(avma + 1));
    }
  }

  // 2. The bytes as symbols, 4 bytes each: a start (12 bits: aliases are common), a name and a
  // rank; names come in padding pairs so that shared name bytes are exercised.
  static const char* const kNames[] = {"a",       "b",        "ab", "__pfx_a",
                                       "__pfx_b", "__pfx_ab", "_a", "a@V"};
  std::vector<KernelSymbolInput> symbols;
  for (size_t at = 0; at + 4 <= size && symbols.size() < 64; at += 4) {
    const uint64_t start = 0xffffffff81000000 + ((data[at] | (data[at + 1] & 0x0f) << 8) << 4);
    symbols.push_back(KernelSymbolInput{start, kNames[data[at + 2] & 7],
                                        static_cast<uint8_t>(data[at + 3] & 0x1f)});
  }
  const std::vector<KernelSymbolInput> original = symbols;
  std::vector<KernelRange> ranges = {{0xffffffff81000000, 0xffffffff81010000}};
  const std::string image = nativeprof::symbolize::SerializeKernelSymbols(ranges, &symbols);
  std::optional<KernelSymbolIndex> index = KernelSymbolIndex::Open(image);
  if (!index.has_value()) std::abort();
  // Around every start, and past the last symbol's reach.
  std::vector<uint64_t> probes = {0xffffffff80fffff0};
  for (const KernelSymbolInput& s : original) {
    for (uint64_t delta : {uint64_t{0}, uint64_t{8}, kKernelLastSymbolSpan - 1,
                           kKernelLastSymbolSpan}) {
      probes.push_back(s.start + delta);
    }
    probes.push_back(s.start - 1);
  }
  for (uint64_t avma : probes) {
    if (std::string(index->Lookup(avma)) != Reference(original, avma)) std::abort();
  }
  return 0;
}
