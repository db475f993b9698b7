// An address-sorted table of function symbols for one module, in the module's own address space
// (svma), built from ELF .symtab/.dynsym (of the file, its debug file or its MiniDebugInfo) or from
// any list of (start, size, name). Owns a copy of every name, so the source ELF can be closed.
// Lookup is a binary search without allocation. Not thread-safe while building; const lookups
// may run concurrently.
#ifndef NATIVEPROF_SYMBOLIZE_SYMBOL_TABLE_H_
#define NATIVEPROF_SYMBOLIZE_SYMBOL_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "module/elf_image.h"

namespace nativeprof::symbolize {

class SymbolTable {
 public:
  // A symbol's binding; among aliases at one address an exported one (either) beats a local one.
  enum Binding : uint8_t { kLocal = 0, kWeak = 1, kGlobal = 2 };

  struct Symbol {
    uint64_t start = 0;
    uint64_t size = 0;      // 0 until Finish() fills in sizes of size-less symbols
    uint32_t name_offset = 0;
    uint32_t name_size = 0;
    uint8_t rank = 0;       // alias preference, see AliasRank
  };

  // Adds one symbol. `section_end` (0 if unknown) bounds a size-0 symbol. Names are copied.
  void Add(uint64_t start, uint64_t size, absl::string_view name, Binding binding,
           uint64_t section_end = 0);
  // Adds the function symbols of `section` (".symtab" or ".dynsym") of `elf`. Returns how many were
  // added (0 when the section is absent or malformed).
  size_t AddElfSymbols(const module::ElfImage& elf, absl::string_view section);
  // Adds "name@plt" for each x86-64 PLT stub, from .rela.plt and .dynsym (stubs have no symbols
  // of their own; perf names them the same way). Returns how many were added.
  size_t AddPltSymbols(const module::ElfImage& elf);
  // Sorts, merges aliases (one name per start address) and bounds size-0 symbols by the next
  // symbol. Call once after the last Add; lookups before Finish() find nothing.
  void Finish();

  // The symbol covering `svma`, or nullptr. Symbols with a size cover [start, start+size);
  // size-less ones reach to the next symbol or their section's end.
  const Symbol* Lookup(uint64_t svma) const;
  absl::string_view Name(const Symbol& symbol) const {
    return absl::string_view(names_.data() + symbol.name_offset, symbol.name_size);
  }

  size_t size() const { return symbols_.size(); }
  bool empty() const { return symbols_.empty(); }
  const std::vector<Symbol>& symbols() const { return symbols_; }

  // Preference among aliases at one address: global or weak over local, a plain name over a
  // versioned "name@VER", fewer leading underscores. Exposed for tests.
  static uint8_t AliasRank(absl::string_view name, Binding binding);

 private:
  // The .plt.got part of AddPltSymbols.
  size_t AddPltGotSymbols(const module::ElfImage& elf);

  struct Pending {
    Symbol symbol;
    uint64_t section_end;
  };
  std::vector<Pending> pending_;
  std::vector<Symbol> symbols_;
  std::string names_;
  uint64_t max_size_ = 0;  // longest symbol, bounds the backward search for enclosing symbols
};

// Calls `fn(name, start, size, binding, section_end)` for each function symbol that `section`
// (".symtab" or ".dynsym") of `elf` defines in an executable section, in table order, with its
// exact name (aliases are not merged). Returns how many it called `fn` for (0 when the section
// is absent or malformed).
size_t ForEachElfFunctionSymbol(
    const module::ElfImage& elf, absl::string_view section,
    const absl::FunctionRef<void(absl::string_view name, uint64_t start, uint64_t size,
                                 SymbolTable::Binding binding, uint64_t section_end)>& fn);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_SYMBOL_TABLE_H_
