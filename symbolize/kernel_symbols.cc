#include "symbolize/kernel_symbols.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace nativeprof::symbolize {
namespace {

// Kernel symbol snapshots are small (a few MB); a handful of boots is plenty.
constexpr uint64_t kKernelCacheBytes = uint64_t{64} << 20;
constexpr absl::string_view kEntryMagic("NPKSYM01", 8);
// kallsyms is 5 to 30 MB; the cap keeps a path that never ends (a test's source, a device) from
// exhausting memory, and the index's 32-bit name offsets from wrapping.
constexpr size_t kMaxKallsymsBytes = size_t{256} << 20;

struct KallsymsLine {
  uint64_t addr;
  char type;
  absl::string_view name;
  absl::string_view module;  // without brackets; empty for the core kernel
};

struct KallsymsCounts {
  size_t lines = 0;
  size_t zero = 0;
};

// Hex digit values by character; 0xff for anything else.
constexpr std::array<uint8_t, 256> kHexDigit = [] {
  std::array<uint8_t, 256> t{};
  for (uint8_t& v : t) v = 0xff;
  for (int c = 0; c < 10; ++c) t['0' + c] = static_cast<uint8_t>(c);
  for (int c = 0; c < 6; ++c) {
    t['a' + c] = static_cast<uint8_t>(10 + c);
    t['A' + c] = static_cast<uint8_t>(10 + c);
  }
  return t;
}();

// The value of `hex` (1 to 16 hex digits, nothing else); false otherwise.
bool ParseHex(absl::string_view hex, uint64_t* value) {
  if (hex.empty() || hex.size() > 16) return false;
  uint64_t v = 0;
  for (char c : hex) {
    const uint8_t d = kHexDigit[static_cast<uint8_t>(c)];
    if (d == 0xff) return false;
    v = v << 4 | d;
  }
  *value = v;
  return true;
}

// Calls `fn` for each text symbol line ("<hex address> <type> <name>[\t[<module>]]"). One pass
// over the text without allocating: kallsyms has 120,000 lines and is read on the first profile
// of every boot.
template <typename Fn>
KallsymsCounts ForEachTextSymbol(absl::string_view text, Fn fn) {
  KallsymsCounts counts;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (eol == nullptr) eol = end;
    const absl::string_view line(p, static_cast<size_t>(eol - p));
    p = eol + 1;
    const size_t sp1 = line.find(' ');
    if (sp1 == absl::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') continue;
    uint64_t addr = 0;
    if (!ParseHex(line.substr(0, sp1), &addr)) continue;
    ++counts.lines;
    const char type = line[sp1 + 1];
    if (addr == 0) ++counts.zero;
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    absl::string_view name = line.substr(sp1 + 3);
    absl::string_view module;
    const size_t tab = name.find('\t');
    if (tab != absl::string_view::npos) {
      module = name.substr(tab + 1);
      name = name.substr(0, tab);
      if (module.size() >= 2 && module.front() == '[' && module.back() == ']') {
        module = module.substr(1, module.size() - 2);
      }
    }
    if (addr == 0 || name.empty()) continue;
    fn(KallsymsLine{addr, type, name, module});
  }
  return counts;
}

// Reads all of `path` (a /proc file: its size is unknown until EOF) into a buffer that is neither
// zero-filled nor copied while it grows, as std::string would be: kallsyms is ~5 MB.
absl::Status ReadText(const std::string& path, std::unique_ptr<char[]>* data, size_t* size) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(absl::StrCat("open ", path));
  size_t capacity = size_t{8} << 20;  // untouched pages cost nothing
  std::unique_ptr<char[]> buffer(new char[capacity]);
  size_t used = 0;
  while (true) {
    if (used == capacity) {
      if (capacity >= kMaxKallsymsBytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat(path, " is larger than ", kMaxKallsymsBytes, " bytes"));
      }
      std::unique_ptr<char[]> bigger(new char[capacity * 2]);
      std::memcpy(bigger.get(), buffer.get(), used);
      buffer = std::move(bigger);
      capacity *= 2;
    }
    const ssize_t n = ::read(fd.get(), buffer.get() + used, capacity - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(absl::StrCat("read ", path));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  *data = std::move(buffer);
  *size = used;
  return absl::OkStatus();
}

absl::Status CountsStatus(const KallsymsCounts& counts) {
  if (counts.lines == 0) return absl::InvalidArgumentError("kallsyms has no symbol lines");
  if (counts.zero == counts.lines) {
    return absl::PermissionDeniedError(
        "kallsyms addresses are hidden (kernel.kptr_restrict); run as root or set "
        "kernel.kptr_restrict=0");
  }
  return absl::OkStatus();
}

void AddLine(SymbolTable* table, const KallsymsLine& l) {
  bool global = l.type == 'T' || l.type == 'W';
  table->Add(l.addr, 0, l.name, global ? SymbolTable::kGlobal : SymbolTable::kLocal);
}

// A stable digest (FNV-1a) of the loaded modules: name, size and address of each, in order;
// reference counts and states change all the time and do not move code.
std::string ModulesFingerprint(absl::string_view modules) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](absl::string_view s) {
    for (char c : s) {
      h ^= static_cast<uint8_t>(c);
      h *= 1099511628211ull;
    }
    h ^= 0xff;
    h *= 1099511628211ull;
  };
  for (absl::string_view line : absl::StrSplit(modules, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 6) continue;
    mix(f[0]);
    mix(f[1]);
    mix(f[5]);
  }
  return absl::StrCat(absl::Hex(h, absl::kZeroPad16));
}

}  // namespace

absl::StatusOr<SymbolTable> ParseKallsyms(absl::string_view text) {
  SymbolTable table;
  KallsymsCounts counts =
      ForEachTextSymbol(text, [&table](const KallsymsLine& l) { AddLine(&table, l); });
  if (absl::Status st = CountsStatus(counts); !st.ok()) return st;
  table.Finish();
  return table;
}

absl::StatusOr<SymbolTable> LoadKallsyms(const std::string& path) {
  std::unique_ptr<char[]> text;
  size_t size = 0;
  NP_RETURN_IF_ERROR(ReadText(path, &text, &size));
  return ParseKallsyms(absl::string_view(text.get(), size));
}

KernelSymbols::KernelSymbols(std::optional<CacheDir> cache, KernelSources sources)
    : cache_(std::move(cache)), sources_(std::move(sources)) {}

void KernelSymbols::LoadStable() {
  stable_loaded_ = true;
  if (!cache_.has_value()) return;
  absl::StatusOr<std::string> boot_id = ReadSmallFile(sources_.boot_id);
  if (!boot_id.ok()) return;
  absl::StatusOr<std::string> modules = ReadSmallFile(sources_.modules);
  // "v2": the index format (kernel_symbol_index.h); entries of older builds keep their own names.
  const std::string entry =
      absl::StrCat("kallsyms-v2-", absl::StripAsciiWhitespace(*boot_id), "-",
                   ModulesFingerprint(modules.ok() ? *modules : std::string()));
  const std::string path = cache_->PathOf("kernel", entry);
  if (absl::StatusOr<ScopedMmap> mapped = MapFileReadOnly(path); mapped.ok()) {
    stable_ = KernelSymbolIndex::Open(
        absl::string_view(static_cast<const char*>(mapped->get()), mapped->size()));
    if (stable_.has_value()) {
      stable_file_ = *std::move(mapped);
      CacheDir::Touch(path);
      return;
    }
    Logger("symbolize")->debug("{}: damaged; reading kallsyms again", path);
  }
  BuildEntry(entry, modules.ok() ? *modules : std::string());
}

void KernelSymbols::BuildEntry(const std::string& entry, absl::string_view modules) {
  // Read the live kallsyms once, keep its stable part (and use it for this run too), and hold on
  // to the text in case an address outside the stable ranges needs the rest.
  read_kallsyms_ = true;
  std::unique_ptr<char[]> data;
  size_t size = 0;
  if (absl::Status st = ReadText(sources_.kallsyms, &data, &size); !st.ok()) {
    live_ = st;
    return;
  }
  const absl::string_view text(data.get(), size);
  std::vector<absl::string_view> listed;
  for (absl::string_view line : absl::StrSplit(modules, '\n', absl::SkipEmpty())) {
    listed.push_back(line.substr(0, line.find(' ')));
  }
  // One pass: the core kernel's text bounds (_stext, _etext) are symbols of the same pass, so its
  // symbols are collected first and those outside the bounds (init text) dropped after. Modules
  // span from their first to their last symbol's start: the end of the last function is unknown,
  // and whatever follows it (a BPF program, say) must not be named from a stale list.
  uint64_t stext = 0;
  uint64_t etext = 0;
  std::vector<KernelSymbolInput> stable;
  stable.reserve(size / 40);  // kallsyms lines average ~45 bytes
  std::vector<KernelSymbolInput> module_symbols;
  absl::flat_hash_map<absl::string_view, KernelRange> module_ranges;
  KallsymsCounts counts = ForEachTextSymbol(text, [&](const KallsymsLine& l) {
    const bool core = l.module.empty();
    if (core && l.type == 'T') {
      if (stext == 0 && l.name == "_stext") stext = l.addr;
      if (etext == 0 && l.name == "_etext") etext = l.addr;
    }
    if (!core && std::find(listed.begin(), listed.end(), l.module) == listed.end()) return;
    const bool global = l.type == 'T' || l.type == 'W';
    const KernelSymbolInput symbol{
        l.addr, l.name,
        SymbolTable::AliasRank(l.name, global ? SymbolTable::kGlobal : SymbolTable::kLocal)};
    if (core) {
      stable.push_back(symbol);
      return;
    }
    module_symbols.push_back(symbol);
    auto [it, inserted] = module_ranges.try_emplace(l.module, KernelRange{l.addr, l.addr + 1});
    it->second.start = std::min(it->second.start, l.addr);
    it->second.end = std::max(it->second.end, l.addr + 1);
  });
  stable.erase(std::remove_if(stable.begin(), stable.end(),
                              [stext, etext](const KernelSymbolInput& s) {
                                return stext == 0 || s.start < stext || s.start >= etext;
                              }),
               stable.end());
  stable.insert(stable.end(), module_symbols.begin(), module_symbols.end());
  if (absl::Status st = CountsStatus(counts); !st.ok()) {
    live_ = st;
    return;
  }
  std::vector<KernelRange> ranges;
  if (stext != 0 && etext > stext) ranges.push_back(KernelRange{stext, etext});
  for (const auto& [name, range] : module_ranges) ranges.push_back(range);
  std::sort(ranges.begin(), ranges.end(),
            [](const KernelRange& x, const KernelRange& y) { return x.start < y.start; });
  if (!ranges.empty()) {
    std::string bytes = SerializeKernelSymbols(ranges, &stable);
    if (absl::Status st = cache_->Put("kernel", entry, bytes, kKernelCacheBytes); !st.ok()) {
      Logger("symbolize")->debug("kernel symbol cache: {}", st.message());
    }
    stable_bytes_ = std::move(bytes);
    stable_ = KernelSymbolIndex::Open(stable_bytes_);
  }
  live_text_ = std::move(data);
  live_text_size_ = size;
}

void KernelSymbols::LoadLive() {
  if (live_text_ == nullptr) {
    read_kallsyms_ = true;
    live_ = LoadKallsyms(sources_.kallsyms);
  } else {
    live_ = ParseKallsyms(absl::string_view(live_text_.get(), live_text_size_));
    live_text_.reset();
  }
  if (!live_->ok()) status_ = live_->status();
}

absl::string_view KernelSymbols::Lookup(uint64_t avma) {
  if (!stable_loaded_) LoadStable();
  if (stable_.has_value() && stable_->InRange(avma)) return stable_->Lookup(avma);
  if (!live_.has_value()) LoadLive();
  if (!live_->ok()) {
    status_ = live_->status();
    return absl::string_view();
  }
  const SymbolTable::Symbol* symbol = (*live_)->Lookup(avma);
  return symbol != nullptr ? (*live_)->Name(*symbol) : absl::string_view();
}

std::vector<uint64_t> ResolveKernelFrames(const SymbolTable& table,
                                          std::span<const sampler::KernelFrameName> frames) {
  // One pass over the table for just the names asked for: kallsyms has ~120,000 symbols.
  absl::flat_hash_map<absl::string_view, std::vector<const SymbolTable::Symbol*>> by_name;
  for (const sampler::KernelFrameName& f : frames) {
    if (f.avma == 0) by_name.try_emplace(f.function);
  }
  if (!by_name.empty()) {
    for (const SymbolTable::Symbol& s : table.symbols()) {
      if (auto it = by_name.find(table.Name(s)); it != by_name.end()) it->second.push_back(&s);
    }
  }
  std::vector<uint64_t> avmas;
  avmas.reserve(frames.size());
  for (const sampler::KernelFrameName& f : frames) {
    uint64_t avma = f.avma;
    if (avma == 0) {
      for (const SymbolTable::Symbol* s : by_name[f.function]) {
        if (f.offset <= s->size) {  // a call may be its function's last instruction
          avma = s->start + f.offset;
          break;
        }
      }
    }
    avmas.push_back(avma);
  }
  return avmas;
}

}  // namespace nativeprof::symbolize
