#include "symbolize/module_symbols.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "module/debug_file_cache.h"
#include "module/debug_file_finder.h"
#include "symbolize/display_name.h"

namespace nativeprof::symbolize {

const char* NameSourceName(NameSource source) {
  switch (source) {
    case NameSource::kSymtab:
      return ".symtab";
    case NameSource::kDebugFile:
      return "debug file";
    case NameSource::kMiniDebugInfo:
      return "MiniDebugInfo";
    case NameSource::kDynsym:
      return ".dynsym";
    case NameSource::kNone:
      return "none";
  }
  return "?";
}

std::string ModuleSymbols::KeyOf(const module::ElfImage& file, const std::string& path) {
  return file.build_id().empty() ? absl::StrCat("path:", path) : file.build_id();
}

std::unique_ptr<ModuleSymbols> ModuleSymbols::Load(std::unique_ptr<module::ElfImage> file,
                                                   const std::string& path,
                                                   const ModuleLoadOptions& options) {
  std::unique_ptr<ModuleSymbols> m(new ModuleSymbols());
  m->file_ = std::move(file);
  module::ElfImage& elf = *m->file_;
  m->has_cfi_ = elf.HasSectionData(".eh_frame") || elf.HasSectionData(".debug_frame");

  bool has_symtab = m->table_.AddElfSymbols(elf, ".symtab") > 0;
  bool has_dwarf = elf.HasSectionData(".debug_info");
  if (has_symtab) m->source_ = NameSource::kSymtab;

  // A separate debug file supplies names for stripped modules and DWARF for modules stripped of
  // debug info only.
  if (!has_symtab || (options.dwarf && !has_dwarf)) {
    absl::StatusOr<module::DebugFileResult> debug =
        module::FindDebugFile(elf, path, options.debug_dirs);
    if (debug.ok()) {
      m->debug_file_ = debug->file->name();
      m->debug_file_how_ = debug->how;
      if (!has_symtab && m->table_.AddElfSymbols(*debug->file, ".symtab") > 0) {
        has_symtab = true;
        m->source_ = NameSource::kDebugFile;
      }
      m->debug_elf_ = std::move(debug->file);
    } else {
      Logger("symbolize")->debug("{}", debug.status().message());
    }
  }
  if (!has_symtab) {
    absl::StatusOr<std::unique_ptr<module::ElfImage>> mini = module::OpenMiniDebugInfo(elf);
    if (mini.ok()) {
      // MiniDebugInfo holds only the symbols .dynsym lacks; both are merged below.
      if (m->table_.AddElfSymbols(**mini, ".symtab") > 0) {
        m->source_ = NameSource::kMiniDebugInfo;
        if (m->debug_elf_ == nullptr) m->debug_elf_ = std::move(*mini);
      }
    } else if (!absl::IsNotFound(mini.status())) {
      Logger("symbolize")->debug("{}: {}", path, mini.status().message());
    }
  }
  // .dynsym: the only names of a stripped library, and global aliases for the others.
  if (m->table_.AddElfSymbols(elf, ".dynsym") > 0 && m->source_ == NameSource::kNone) {
    m->source_ = NameSource::kDynsym;
  }
  m->table_.AddPltSymbols(elf);
  m->table_.Finish();

  const module::ElfImage* dwarf_elf = has_dwarf ? &elf : m->debug_elf_.get();
  if (options.dwarf && dwarf_elf != nullptr) {
    if (options.cache.has_value()) {
      m->dwarf_elf_ = module::OpenDecompressedDebugFile(*dwarf_elf, *options.cache);
      if (m->dwarf_elf_ != nullptr) dwarf_elf = m->dwarf_elf_.get();
    }
    m->dwarf_ = DwarfInfo::Open(*dwarf_elf);
  }
  return m;
}

std::vector<std::string> ModuleSymbols::skipped_sections() const {
  std::vector<std::string> all = file_->skipped_sections();
  if (debug_elf_ != nullptr) {
    all.insert(all.end(), debug_elf_->skipped_sections().begin(),
               debug_elf_->skipped_sections().end());
  }
  return all;
}

const std::string& ModuleSymbols::DisplayNameOf(const SymbolTable::Symbol* symbol,
                                                bool full_names) {
  std::vector<std::string>& cache = full_names ? full_names_ : names_;
  if (cache.empty()) cache.resize(table_.size());
  std::string& name = cache[static_cast<size_t>(symbol - table_.symbols().data())];
  if (name.empty()) name = DisplayName(table_.Name(*symbol), full_names);
  return name;
}

bool ModuleSymbols::NameAt(uint64_t file_offset, const NamingOptions& naming,
                           std::vector<DwarfFrame>* out) {
  uint64_t svma = 0;
  if (!FileOffsetToSvma(file_offset, &svma)) return false;
  const SymbolTable::Symbol* symbol = Lookup(svma);
  if (dwarf_ != nullptr && dwarf_->Describe(svma, naming.inline_frames, naming.full_names, out)) {
    if (symbol != nullptr) out->back().function = DisplayNameOf(symbol, naming.full_names);
    return true;
  }
  if (symbol == nullptr) return false;
  out->push_back(DwarfFrame{DisplayNameOf(symbol, naming.full_names), std::string(), 0});
  return true;
}

void ModuleSymbols::PrepareNames(uint64_t file_offset, const NamingOptions& naming) {
  std::vector<DwarfFrame> frames;
  (void)NameAt(file_offset, naming, &frames);
}

}  // namespace nativeprof::symbolize
