#include "symbolize/kernel_symbols.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"

namespace nativeprof::symbolize {

absl::StatusOr<SymbolTable> ParseKallsyms(absl::string_view text) {
  SymbolTable table;
  size_t lines = 0;
  size_t zero = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    // "<hex address> <type> <name>[\t[<module>]]"
    size_t sp1 = line.find(' ');
    if (sp1 == absl::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') continue;
    uint64_t addr = 0;
    if (!absl::SimpleHexAtoi(line.substr(0, sp1), &addr)) continue;
    ++lines;
    char type = line[sp1 + 1];
    if (addr == 0) ++zero;
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    absl::string_view name = line.substr(sp1 + 3);
    size_t tab = name.find('\t');
    if (tab != absl::string_view::npos) name = name.substr(0, tab);
    if (addr == 0 || name.empty()) continue;
    bool global = type == 'T' || type == 'W';
    table.Add(addr, 0, name, global ? SymbolTable::kGlobal : SymbolTable::kLocal);
  }
  if (lines == 0) return absl::InvalidArgumentError("kallsyms has no symbol lines");
  if (zero == lines) {
    return absl::PermissionDeniedError(
        "kallsyms addresses are hidden (kernel.kptr_restrict); run as root or set "
        "kernel.kptr_restrict=0");
  }
  table.Finish();
  return table;
}

absl::StatusOr<SymbolTable> LoadKallsyms(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  return ParseKallsyms(*text);
}

}  // namespace nativeprof::symbolize
