#include "symbolize/kernel_symbols.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/logging.h"

namespace nativeprof::symbolize {
namespace {

// Kernel symbol snapshots are small (a few MB); a handful of boots is plenty.
constexpr uint64_t kKernelCacheBytes = uint64_t{64} << 20;
constexpr absl::string_view kEntryMagic("NPKSYM01", 8);

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

// Calls `fn` for each text symbol line ("<hex address> <type> <name>[\t[<module>]]").
KallsymsCounts ForEachTextSymbol(absl::string_view text,
                                 const std::function<void(const KallsymsLine&)>& fn) {
  KallsymsCounts counts;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t sp1 = line.find(' ');
    if (sp1 == absl::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') continue;
    uint64_t addr = 0;
    if (!absl::SimpleHexAtoi(line.substr(0, sp1), &addr)) continue;
    ++counts.lines;
    char type = line[sp1 + 1];
    if (addr == 0) ++counts.zero;
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    absl::string_view name = line.substr(sp1 + 3);
    absl::string_view module;
    size_t tab = name.find('\t');
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

// The address of a core kernel text symbol found by its exact line ("<addr> T <name>\n"), without
// parsing the other 120,000 lines; 0 when absent.
uint64_t CoreSymbolAddress(absl::string_view text, absl::string_view name) {
  const std::string needle = absl::StrCat(" T ", name, "\n");
  size_t at = text.find(needle);
  if (at == absl::string_view::npos) return 0;
  size_t line = text.rfind('\n', at);
  line = line == absl::string_view::npos ? 0 : line + 1;
  uint64_t addr = 0;
  return absl::SimpleHexAtoi(text.substr(line, at - line), &addr) ? addr : 0;
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
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  return ParseKallsyms(*text);
}

KernelSymbols::KernelSymbols(std::optional<CacheDir> cache, KernelSources sources)
    : cache_(std::move(cache)), sources_(std::move(sources)) {}

bool KernelSymbols::InStableRange(uint64_t avma) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), avma,
                             [](uint64_t a, const Range& r) { return a < r.start; });
  return it != ranges_.begin() && avma < std::prev(it)->end;
}

bool KernelSymbols::UseEntry(absl::string_view bytes) {
  static_assert(sizeof(Range) == 16, "cache entries store each range as two u64");
  // Layout: magic, range count, ranges (start, end), then a SymbolTable::Serialize() image.
  uint64_t nranges = 0;
  if (bytes.size() < 16 || bytes.substr(0, kEntryMagic.size()) != kEntryMagic) return false;
  std::memcpy(&nranges, bytes.data() + 8, 8);
  if (nranges == 0 || nranges > (bytes.size() - 16) / sizeof(Range)) return false;
  std::vector<Range> ranges(nranges);
  std::memcpy(ranges.data(), bytes.data() + 16, nranges * sizeof(Range));
  if (!std::is_sorted(ranges.begin(), ranges.end(),
                      [](const Range& x, const Range& y) { return x.start < y.start; })) {
    return false;
  }
  absl::StatusOr<SymbolTableView> view =
      SymbolTableView::Open(bytes.substr(16 + nranges * sizeof(Range)));
  if (!view.ok()) return false;
  stable_ = *view;
  ranges_ = std::move(ranges);
  return true;
}

void KernelSymbols::LoadStable() {
  stable_loaded_ = true;
  if (!cache_.has_value()) return;
  absl::StatusOr<std::string> boot_id = ReadSmallFile(sources_.boot_id);
  if (!boot_id.ok()) return;
  absl::StatusOr<std::string> modules = ReadSmallFile(sources_.modules);
  const std::string entry =
      absl::StrCat("kallsyms-", absl::StripAsciiWhitespace(*boot_id), "-",
                   ModulesFingerprint(modules.ok() ? *modules : std::string()));
  const std::string path = cache_->PathOf("kernel", entry);
  if (absl::StatusOr<ScopedMmap> mapped = MapFileReadOnly(path); mapped.ok()) {
    if (UseEntry(absl::string_view(static_cast<const char*>(mapped->get()), mapped->size()))) {
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
  absl::StatusOr<std::string> text = ReadSmallFile(sources_.kallsyms);
  read_kallsyms_ = true;
  if (!text.ok()) {
    live_ = text.status();
    return;
  }
  const uint64_t stext = CoreSymbolAddress(*text, "_stext");
  const uint64_t etext = CoreSymbolAddress(*text, "_etext");
  std::vector<absl::string_view> listed;
  for (absl::string_view line : absl::StrSplit(modules, '\n', absl::SkipEmpty())) {
    listed.push_back(line.substr(0, line.find(' ')));
  }
  // Modules span from their first to their last symbol's start: the end of the last function is
  // unknown, and whatever follows it (a BPF program, say) must not be named from a stale list.
  SymbolTable stable;
  absl::flat_hash_map<absl::string_view, Range> module_ranges;
  KallsymsCounts counts = ForEachTextSymbol(*text, [&](const KallsymsLine& l) {
    bool core = l.module.empty() && stext != 0 && l.addr >= stext && l.addr < etext;
    bool module = !l.module.empty() &&
                  std::find(listed.begin(), listed.end(), l.module) != listed.end();
    if (!core && !module) return;
    AddLine(&stable, l);
    if (module) {
      auto [it, inserted] = module_ranges.try_emplace(l.module, Range{l.addr, l.addr + 1});
      it->second.start = std::min(it->second.start, l.addr);
      it->second.end = std::max(it->second.end, l.addr + 1);
    }
  });
  if (absl::Status st = CountsStatus(counts); !st.ok()) {
    live_ = st;
    return;
  }
  stable.Finish();
  std::vector<Range> ranges;
  if (stext != 0 && etext > stext) ranges.push_back(Range{stext, etext});
  for (const auto& [name, range] : module_ranges) ranges.push_back(range);
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& x, const Range& y) { return x.start < y.start; });
  live_text_ = *std::move(text);
  if (ranges.empty()) return;

  std::string bytes(kEntryMagic.data(), kEntryMagic.size());
  const uint64_t n = ranges.size();
  bytes.append(reinterpret_cast<const char*>(&n), 8);
  bytes.append(reinterpret_cast<const char*>(ranges.data()), ranges.size() * sizeof(Range));
  bytes += stable.Serialize();
  if (absl::Status st = cache_->Put("kernel", entry, bytes, kKernelCacheBytes); !st.ok()) {
    Logger("symbolize")->debug("kernel symbol cache: {}", st.message());
  }
  stable_bytes_ = std::move(bytes);
  UseEntry(stable_bytes_);
}

void KernelSymbols::LoadLive() {
  if (live_text_.empty()) read_kallsyms_ = true;
  live_ = live_text_.empty() ? LoadKallsyms(sources_.kallsyms) : ParseKallsyms(live_text_);
  live_text_ = std::string();
  if (!live_->ok()) status_ = live_->status();
}

absl::string_view KernelSymbols::Lookup(uint64_t avma) {
  if (!stable_loaded_) LoadStable();
  if (stable_.has_value() && InStableRange(avma)) {
    std::optional<SymbolTable::Symbol> symbol = stable_->Lookup(avma);
    return symbol.has_value() ? stable_->Name(*symbol) : absl::string_view();
  }
  if (!live_.has_value()) LoadLive();
  if (!live_->ok()) {
    status_ = live_->status();
    return absl::string_view();
  }
  const SymbolTable::Symbol* symbol = (*live_)->Lookup(avma);
  return symbol != nullptr ? (*live_)->Name(*symbol) : absl::string_view();
}

}  // namespace nativeprof::symbolize
