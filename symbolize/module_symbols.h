// Everything the symbolizer knows about one module's names, loaded once per module (shared by every
// ModuleId with the same build-id): the function symbol table from the best source (.symtab of the
// file, of its separate debug file or of its MiniDebugInfo, else .dynsym), the PT_LOAD layout for
// file offset -> svma, and the DWARF used for inline frames and lines. Not thread-safe.
#ifndef NATIVEPROF_SYMBOLIZE_MODULE_SYMBOLS_H_
#define NATIVEPROF_SYMBOLIZE_MODULE_SYMBOLS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/cache_dir.h"
#include "module/debug_file_finder.h"
#include "module/elf_image.h"
#include "symbolize/dwarf_info.h"
#include "symbolize/symbol_table.h"

namespace nativeprof::symbolize {

// Where a module's names came from, best first.
enum class NameSource : uint8_t { kSymtab, kDebugFile, kMiniDebugInfo, kDynsym, kNone };
const char* NameSourceName(NameSource source);

struct ModuleLoadOptions {
  std::vector<std::string> debug_dirs = module::DefaultDebugDirs();
  bool dwarf = true;  // open DWARF (inline frames, lines, producer)
  // Where decompressed copies of compressed DWARF are kept between runs; none: inflate each time.
  std::optional<CacheDir> cache;
};

// How the symbolizer asks for names (its options' part that reaches a module's tables).
struct NamingOptions {
  bool inline_frames = true;
  bool full_names = false;
};

class ModuleSymbols {
 public:
  // Loads the names of the module whose ELF is `file`; `path` is where it lives (or lived) on disk,
  // for debuglink lookups. Never fails: a module without names gets an empty table and
  // source() == kNone.
  static std::unique_ptr<ModuleSymbols> Load(std::unique_ptr<module::ElfImage> file,
                                             const std::string& path,
                                             const ModuleLoadOptions& options);

  // The key modules share their symbols under: the build-id (same build-id, same names, whatever
  // the path), else the path.
  static std::string KeyOf(const module::ElfImage& file, const std::string& path);

  // File offset -> svma through the module's PT_LOAD headers; false when outside every segment.
  bool FileOffsetToSvma(uint64_t file_offset, uint64_t* svma) const {
    return file_->FileOffsetToSvma(file_offset, svma);
  }
  // The symbol covering svma, or nullptr.
  const SymbolTable::Symbol* Lookup(uint64_t svma) const { return table_.Lookup(svma); }
  // The display name of a symbol of this table (demangled, cached).
  const std::string& DisplayNameOf(const SymbolTable::Symbol* symbol, bool full_names);

  const SymbolTable& table() const { return table_; }
  NameSource source() const { return source_; }
  const std::string& build_id() const { return file_->build_id(); }
  const module::ElfImage& file() const { return *file_; }
  // Path of the separate debug file used, and how it was found ("build-id"/"debuglink"); empty
  // when none.
  const std::string& debug_file() const { return debug_file_; }
  const std::string& debug_file_how() const { return debug_file_how_; }
  // Whether unwind info exists (.eh_frame or .debug_frame), for the quality report.
  bool has_cfi() const { return has_cfi_; }
  // Sections of the module's file or its debug file left out as corrupt, one message each
  // (module::ElfImage::skipped_sections).
  std::vector<std::string> skipped_sections() const;
  // Names the address at `file_offset`: appends the inlined functions containing it, innermost
  // first, then the function they are in (only that one without naming.inline_frames), each
  // with its file:line from the DWARF; the outermost is named by its ELF symbol where there is
  // one (clone suffixes, full qualification), and a frame nothing names has an empty function.
  // Without DWARF for it, the ELF symbol alone (no file:line). False, appending nothing, when
  // neither names it.
  bool NameAt(uint64_t file_offset, const NamingOptions& naming, std::vector<DwarfFrame>* out);
  // NameAt for its side effects only (demangled names cached, the DWARF unit indexed), so that
  // naming the address later finds them done: what the prefetcher does for the addresses of
  // stacks while the target still runs.
  void PrepareNames(uint64_t file_offset, const NamingOptions& naming);
  // DWARF for inline frames and lines; nullptr when the module has none.
  DwarfInfo* dwarf() { return dwarf_.get(); }

 private:
  ModuleSymbols() = default;

  std::unique_ptr<module::ElfImage> file_;
  // The separate debug file or MiniDebugInfo, kept for DWARF.
  std::unique_ptr<module::ElfImage> debug_elf_;
  SymbolTable table_;
  NameSource source_ = NameSource::kNone;
  std::string debug_file_;
  std::string debug_file_how_;
  bool has_cfi_ = false;
  // The decompressed copy DWARF is read from, when the DWARF is compressed; outlives dwarf_.
  std::unique_ptr<module::ElfImage> dwarf_elf_;
  std::unique_ptr<DwarfInfo> dwarf_;
  // Display names by symbol index, filled on first use; empty = not computed yet (no symbol has an
  // empty name).
  std::vector<std::string> names_;
  std::vector<std::string> full_names_;
};

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_MODULE_SYMBOLS_H_
