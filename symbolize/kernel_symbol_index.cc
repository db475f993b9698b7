#include "symbolize/kernel_symbol_index.h"

#include <algorithm>
#include <cstring>

namespace nativeprof::symbolize {
namespace {

// Layout: magic, range count, symbol count, names size (u64 each); ranges (start, end: u64 each);
// symbol starts (u64 each, ascending); name offsets (u32 each, into the names); the names, each
// NUL-terminated.
constexpr absl::string_view kMagic("NPKIDX01", 8);
constexpr size_t kHeader = 8 + 3 * 8;
constexpr absl::string_view kPaddingPrefix("__pfx_", 6);

template <typename T>
T Get(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

template <typename T>
void Set(std::string* out, size_t at, T value) {
  std::memcpy(out->data() + at, &value, sizeof(value));
}

// Which of two aliases at one address names it: as SymbolTable::Finish orders them.
bool Better(const KernelSymbolInput& a, const KernelSymbolInput& b) {
  if (a.rank != b.rank) return a.rank > b.rank;
  if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();
  return a.name < b.name;
}

}  // namespace

std::string SerializeKernelSymbols(const std::vector<KernelRange>& ranges,
                                   std::vector<KernelSymbolInput>* symbols) {
  std::vector<KernelSymbolInput>& in = *symbols;
  const auto by_start = [](const KernelSymbolInput& a, const KernelSymbolInput& b) {
    return a.start < b.start;
  };
  // The core kernel's symbols come address-ordered already; modules' need sorting.
  if (!std::is_sorted(in.begin(), in.end(), by_start)) std::sort(in.begin(), in.end(), by_start);
  // One symbol per address, the best alias, compacted in place.
  size_t count = 0;
  size_t names_bound = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].name.empty()) continue;
    if (count > 0 && in[count - 1].start == in[i].start) {
      if (Better(in[i], in[count - 1])) in[count - 1] = in[i];
      continue;
    }
    in[count++] = in[i];
  }
  in.resize(count);
  for (const KernelSymbolInput& s : in) names_bound += s.name.size() + 1;

  const size_t starts_at = kHeader + ranges.size() * 16;
  const size_t offsets_at = starts_at + count * 8;
  const size_t names_at = offsets_at + count * 4;
  std::string out;
  out.reserve(names_at + names_bound);
  out.resize(names_at);
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  Set<uint64_t>(&out, 8, ranges.size());
  Set<uint64_t>(&out, 16, count);
  for (size_t i = 0; i < ranges.size(); ++i) {
    Set<uint64_t>(&out, kHeader + i * 16, ranges[i].start);
    Set<uint64_t>(&out, kHeader + i * 16 + 8, ranges[i].end);
  }
  absl::string_view previous;
  uint32_t previous_offset = 0;
  for (size_t i = 0; i < count; ++i) {
    const absl::string_view name = in[i].name;
    uint32_t offset;
    // "__pfx_NAME" is the padding right before NAME: NAME is the tail of the previous name.
    if (previous.size() == name.size() + kPaddingPrefix.size() &&
        previous.substr(0, kPaddingPrefix.size()) == kPaddingPrefix &&
        previous.substr(kPaddingPrefix.size()) == name) {
      offset = previous_offset + static_cast<uint32_t>(kPaddingPrefix.size());
    } else {
      offset = static_cast<uint32_t>(out.size() - names_at);
      out.append(name.data(), name.size());
      out.push_back('\0');
    }
    Set<uint64_t>(&out, starts_at + i * 8, in[i].start);
    Set<uint32_t>(&out, offsets_at + i * 4, offset);
    previous = name;
    previous_offset = offset;
  }
  Set<uint64_t>(&out, 24, out.size() - names_at);
  return out;
}

std::optional<KernelSymbolIndex> KernelSymbolIndex::Open(absl::string_view bytes) {
  if (bytes.size() < kHeader || bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  const uint64_t range_count = Get<uint64_t>(bytes.data() + 8);
  const uint64_t count = Get<uint64_t>(bytes.data() + 16);
  const uint64_t names_size = Get<uint64_t>(bytes.data() + 24);
  const uint64_t body = bytes.size() - kHeader;
  if (range_count == 0 || range_count > body / 16 || count > (body - range_count * 16) / 12 ||
      names_size != body - range_count * 16 - count * 12 || names_size > UINT32_MAX) {
    return std::nullopt;
  }
  KernelSymbolIndex index;
  index.ranges_ = bytes.data() + kHeader;
  index.range_count_ = range_count;
  for (size_t i = 1; i < range_count; ++i) {
    if (Get<uint64_t>(index.ranges_ + i * 16) < Get<uint64_t>(index.ranges_ + (i - 1) * 16)) {
      return std::nullopt;
    }
  }
  index.starts_ = index.ranges_ + range_count * 16;
  index.name_offsets_ = index.starts_ + count * 8;
  index.count_ = count;
  index.names_ = bytes.substr(kHeader + range_count * 16 + count * 12);
  return index;
}

uint64_t KernelSymbolIndex::Start(size_t i) const { return Get<uint64_t>(starts_ + i * 8); }

bool KernelSymbolIndex::InRange(uint64_t avma) const {
  // The last range starting at or before avma.
  size_t lo = 0, hi = range_count_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (avma < Get<uint64_t>(ranges_ + mid * 16)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo > 0 && avma < Get<uint64_t>(ranges_ + (lo - 1) * 16 + 8);
}

absl::string_view KernelSymbolIndex::Lookup(uint64_t avma) const {
  // The last symbol starting at or before avma reaches to the next one's start.
  size_t lo = 0, hi = count_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (avma < Start(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  if (lo == 0) return absl::string_view();
  const size_t i = lo - 1;
  if (i + 1 == count_ && avma - Start(i) >= kKernelLastSymbolSpan) return absl::string_view();
  const uint32_t offset = Get<uint32_t>(name_offsets_ + i * 4);
  if (offset >= names_.size()) return absl::string_view();
  absl::string_view name = names_.substr(offset);
  const size_t end = name.find('\0');
  if (end == absl::string_view::npos) return absl::string_view();
  return name.substr(0, end);
}

}  // namespace nativeprof::symbolize
