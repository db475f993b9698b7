#include "symbolize/symbol_table.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace nativeprof::symbolize {
namespace {

// A size-less symbol with nothing after it in a known section still names at most this much.
constexpr uint64_t kUnboundedSymbolSpan = 4096;
// How many earlier symbols Lookup inspects for one that encloses the address.
constexpr int kMaxEnclosingSearch = 16;

}  // namespace

uint8_t SymbolTable::AliasRank(absl::string_view name, Binding binding) {
  // Weak is as good as global: glibc's public names are often weak aliases of a global
  // internal one (poll of __poll, nanosleep of __nanosleep), and the public name is what the
  // program called.
  uint8_t rank = binding == kLocal ? 0 : 8;
  if (name.find('@') == absl::string_view::npos) rank |= 4;
  size_t underscores = 0;
  while (underscores < name.size() && name[underscores] == '_') ++underscores;
  rank |= underscores == 0 ? 2 : (underscores == 1 ? 1 : 0);
  return rank;
}

void SymbolTable::Add(uint64_t start, uint64_t size, absl::string_view name, Binding binding,
                      uint64_t section_end) {
  if (name.empty() || name.size() > 0xffffffu) return;
  if (names_.size() + name.size() > 0xffffffffu) return;  // 4 GiB of names: refuse, never wrap
  Pending p;
  p.symbol.start = start;
  p.symbol.size = size;
  p.symbol.name_offset = static_cast<uint32_t>(names_.size());
  p.symbol.name_size = static_cast<uint32_t>(name.size());
  p.symbol.rank = AliasRank(name, binding);
  p.section_end = section_end;
  names_.append(name.data(), name.size());
  pending_.push_back(p);
}

size_t ForEachElfFunctionSymbol(
    const module::ElfImage& file, absl::string_view section,
    const absl::FunctionRef<void(absl::string_view name, uint64_t start, uint64_t size,
                                 SymbolTable::Binding binding, uint64_t section_end)>& fn) {
  GElf_Shdr shdr;
  Elf_Scn* scn = file.FindSection(section, &shdr);
  if (scn == nullptr || shdr.sh_type == SHT_NOBITS || shdr.sh_entsize == 0) return 0;
  Elf* elf = file.elf();
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) return 0;
  size_t count = shdr.sh_size / shdr.sh_entsize;

  // Executable sections: only their symbols can be code, and their ends bound size-less symbols.
  size_t shnum = 0;
  if (elf_getshdrnum(elf, &shnum) != 0) return 0;
  std::vector<uint64_t> exec_end(std::min<size_t>(shnum, 1u << 16), 0);
  for (size_t i = 1; i < exec_end.size(); ++i) {
    Elf_Scn* s = elf_getscn(elf, i);
    GElf_Shdr sh;
    if (s == nullptr || gelf_getshdr(s, &sh) == nullptr) continue;
    if ((sh.sh_flags & SHF_EXECINSTR) != 0 && (sh.sh_flags & SHF_ALLOC) != 0) {
      exec_end[i] = sh.sh_addr + sh.sh_size;
    }
  }

  size_t called = 0;
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    int type = GELF_ST_TYPE(sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= exec_end.size()) continue;
    uint64_t section_end = exec_end[sym.st_shndx];
    if (section_end == 0) continue;  // not in an executable section: data or a marker
    if (sym.st_value == 0 || sym.st_value >= section_end) continue;
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (name == nullptr || name[0] == '\0') continue;
    absl::string_view n(name);
    // Local labels and ARM/AArch64 mapping symbols are not functions.
    if (type == STT_NOTYPE && (n[0] == '$' || absl::string_view(n).substr(0, 2) == ".L")) continue;
    int bind = GELF_ST_BIND(sym.st_info);
    fn(n, sym.st_value, sym.st_size,
       bind == STB_GLOBAL ? SymbolTable::kGlobal
                          : (bind == STB_WEAK ? SymbolTable::kWeak : SymbolTable::kLocal),
       section_end);
    ++called;
  }
  return called;
}

size_t SymbolTable::AddElfSymbols(const module::ElfImage& file, absl::string_view section) {
  return ForEachElfFunctionSymbol(
      file, section,
      [this](absl::string_view name, uint64_t start, uint64_t size, SymbolTable::Binding binding,
             uint64_t section_end) {
        Add(start, size, name, binding, section_end);
      });
}

size_t SymbolTable::AddPltSymbols(const module::ElfImage& file) {
  Elf* elf = file.elf();
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr || ehdr.e_machine != EM_X86_64) return 0;
  GElf_Shdr rela_shdr;
  Elf_Scn* rela = file.FindSection(".rela.plt", &rela_shdr);
  if (rela == nullptr || rela_shdr.sh_type != SHT_RELA || rela_shdr.sh_entsize == 0) return 0;
  // With IBT (-z ibtplt / CET) the callable stubs are in .plt.sec, one per relocation and no
  // header; otherwise in .plt after the 16-byte PLT0 header.
  GElf_Shdr plt_shdr;
  uint64_t first = 0;
  if (file.FindSection(".plt.sec", &plt_shdr) != nullptr) {
    first = plt_shdr.sh_addr;
  } else if (file.FindSection(".plt", &plt_shdr) != nullptr) {
    first = plt_shdr.sh_addr + 16;
  } else {
    return 0;
  }
  const uint64_t entry = 16;
  const uint64_t plt_end = plt_shdr.sh_addr + plt_shdr.sh_size;
  Elf_Scn* dynsym = elf_getscn(elf, rela_shdr.sh_link);
  GElf_Shdr dynsym_shdr;
  if (dynsym == nullptr || gelf_getshdr(dynsym, &dynsym_shdr) == nullptr) return 0;
  Elf_Data* rela_data = elf_getdata(rela, nullptr);
  Elf_Data* sym_data = elf_getdata(dynsym, nullptr);
  if (rela_data == nullptr || sym_data == nullptr) return 0;

  size_t added = 0;
  const size_t count = rela_shdr.sh_size / rela_shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t start = first + i * entry;
    if (start + entry > plt_end) break;
    GElf_Rela r;
    if (gelf_getrela(rela_data, static_cast<int>(i), &r) == nullptr) break;
    GElf_Sym sym;
    if (GELF_R_SYM(r.r_info) == 0 ||
        gelf_getsym(sym_data, static_cast<int>(GELF_R_SYM(r.r_info)), &sym) == nullptr) {
      continue;  // IRELATIVE and friends name no symbol
    }
    const char* name = elf_strptr(elf, dynsym_shdr.sh_link, sym.st_name);
    if (name == nullptr || name[0] == '\0') continue;
    absl::string_view n(name);
    n = n.substr(0, n.find('@'));
    Add(start, entry, absl::StrCat(n, "@plt"), kLocal, plt_end);
    ++added;
  }
  return added + AddPltGotSymbols(file);
}

size_t SymbolTable::AddPltGotSymbols(const module::ElfImage& file) {
  // .plt.got stubs jump through a GOT slot that a GLOB_DAT relocation in .rela.dyn names:
  // "[endbr64] jmp *disp(%rip)". Decode the jump to find the slot, as objdump does.
  Elf* elf = file.elf();
  GElf_Shdr got_shdr, rela_shdr;
  Elf_Scn* got = file.FindSection(".plt.got", &got_shdr);
  Elf_Scn* rela = file.FindSection(".rela.dyn", &rela_shdr);
  if (got == nullptr || rela == nullptr || got_shdr.sh_type != SHT_PROGBITS ||
      rela_shdr.sh_type != SHT_RELA || rela_shdr.sh_entsize == 0) {
    return 0;
  }
  Elf_Data* code = elf_getdata(got, nullptr);
  Elf_Data* rela_data = elf_getdata(rela, nullptr);
  Elf_Scn* dynsym = elf_getscn(elf, rela_shdr.sh_link);
  GElf_Shdr dynsym_shdr;
  if (code == nullptr || code->d_buf == nullptr || rela_data == nullptr || dynsym == nullptr ||
      gelf_getshdr(dynsym, &dynsym_shdr) == nullptr) {
    return 0;
  }
  Elf_Data* sym_data = elf_getdata(dynsym, nullptr);
  if (sym_data == nullptr) return 0;
  absl::flat_hash_map<uint64_t, std::string> slot_names;  // GOT slot svma -> symbol name
  const size_t relocs = rela_shdr.sh_size / rela_shdr.sh_entsize;
  for (size_t i = 0; i < relocs && i < (1u << 20); ++i) {
    GElf_Rela r;
    GElf_Sym sym;
    if (gelf_getrela(rela_data, static_cast<int>(i), &r) == nullptr) break;
    if (GELF_R_TYPE(r.r_info) != R_X86_64_GLOB_DAT || GELF_R_SYM(r.r_info) == 0 ||
        gelf_getsym(sym_data, static_cast<int>(GELF_R_SYM(r.r_info)), &sym) == nullptr) {
      continue;
    }
    const char* name = elf_strptr(elf, dynsym_shdr.sh_link, sym.st_name);
    if (name != nullptr && name[0] != '\0') slot_names.emplace(r.r_offset, name);
  }
  const auto* bytes = static_cast<const uint8_t*>(code->d_buf);
  const uint64_t entry = got_shdr.sh_entsize == 16 ? 16 : 8;
  const uint64_t end = got_shdr.sh_addr + got_shdr.sh_size;
  size_t added = 0;
  for (uint64_t off = 0; off + entry <= code->d_size; off += entry) {
    uint64_t jmp = off;
    if (bytes[jmp] == 0xf3 && off + 4 + 6 <= code->d_size) jmp += 4;  // endbr64
    if (jmp + 6 > code->d_size || bytes[jmp] != 0xff || bytes[jmp + 1] != 0x25) continue;
    int32_t disp;
    std::memcpy(&disp, bytes + jmp + 2, sizeof(disp));
    const uint64_t slot = got_shdr.sh_addr + jmp + 6 + static_cast<int64_t>(disp);
    auto it = slot_names.find(slot);
    if (it == slot_names.end()) continue;
    absl::string_view n(it->second);
    n = n.substr(0, n.find('@'));
    Add(got_shdr.sh_addr + off, entry, absl::StrCat(n, "@plt"), kLocal, end);
    ++added;
  }
  return added;
}

void SymbolTable::Finish() {
  std::sort(pending_.begin(), pending_.end(), [this](const Pending& a, const Pending& b) {
    if (a.symbol.start != b.symbol.start) return a.symbol.start < b.symbol.start;
    if (a.symbol.rank != b.symbol.rank) return a.symbol.rank > b.symbol.rank;
    if (a.symbol.name_size != b.symbol.name_size) return a.symbol.name_size < b.symbol.name_size;
    return Name(a.symbol) < Name(b.symbol);
  });
  // Keep the best alias per address, with the largest size any alias declares.
  std::vector<Pending> merged;
  merged.reserve(pending_.size());
  for (const Pending& p : pending_) {
    if (!merged.empty() && merged.back().symbol.start == p.symbol.start) {
      Pending& m = merged.back();
      m.symbol.size = std::max(m.symbol.size, p.symbol.size);
      m.section_end = std::max(m.section_end, p.section_end);
      continue;
    }
    merged.push_back(p);
  }
  pending_.clear();
  pending_.shrink_to_fit();

  symbols_.clear();
  symbols_.reserve(merged.size());
  max_size_ = 0;
  for (size_t i = 0; i < merged.size(); ++i) {
    Symbol s = merged[i].symbol;
    if (s.size == 0) {
      uint64_t end = merged[i].section_end;
      if (i + 1 < merged.size() && (end == 0 || merged[i + 1].symbol.start < end)) {
        end = merged[i + 1].symbol.start;
      }
      if (end == 0 || end <= s.start) end = s.start + kUnboundedSymbolSpan;
      s.size = end - s.start;
    }
    max_size_ = std::max(max_size_, s.size);
    symbols_.push_back(s);
  }
  // Names of dropped aliases stay in names_; compacting is not worth a second copy.
}

const SymbolTable::Symbol* SymbolTable::Lookup(uint64_t svma) const {
  // The first symbol starting after svma, then back over the ones that might enclose it.
  auto after = std::upper_bound(symbols_.begin(), symbols_.end(), svma,
                                [](uint64_t a, const Symbol& s) { return a < s.start; });
  for (int steps = 0; after != symbols_.begin() && steps < kMaxEnclosingSearch; ++steps) {
    const Symbol& s = *--after;
    if (svma - s.start < s.size) return &s;
    if (svma - s.start >= max_size_) break;  // nothing earlier can reach this far
  }
  return nullptr;
}

}  // namespace nativeprof::symbolize
