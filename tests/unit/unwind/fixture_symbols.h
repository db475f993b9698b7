// Test helper (header-only): names fixture addresses from the stored modules' ELF symbol tables
// (.symtab and .dynsym), so unwind tests can assert which functions a stack passes through.
#ifndef NATIVEPROF_TESTS_UNIT_UNWIND_FIXTURE_SYMBOLS_H_
#define NATIVEPROF_TESTS_UNIT_UNWIND_FIXTURE_SYMBOLS_H_

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "module/elf_image.h"
#include "unwind/elf_cfi.h"
#include "unwind/sample_fixture.h"
#include "unwind/unwinder.h"

namespace nativeprof::unwind::testing {

class FixtureSymbols {
 public:
  explicit FixtureSymbols(const LoadedFixture& fixture) : fixture_(fixture) {}

  // The function containing `avma` ("" if unknown).
  std::string Name(uint64_t avma) {
    const sampler::Mapping* m = fixture_.address_space().Find(avma);
    if (m == nullptr) return "";
    Module& mod = Get(m->module);
    uint64_t vaddr;
    if (mod.cfi == nullptr || !mod.cfi->image().FileOffsetToSvma(m->FileOffset(avma), &vaddr)) {
      return "";
    }
    auto it = mod.syms.upper_bound(vaddr);
    if (it == mod.syms.begin()) return "";
    --it;
    if (vaddr >= it->second.first) return "";
    return it->second.second;
  }

  std::vector<std::string> Names(const UnwoundStack& stack) {
    std::vector<std::string> out;
    for (const Frame& f : stack.frames) out.push_back(Name(LookupAvma(f)));
    return out;
  }

 private:
  struct Module {
    std::unique_ptr<ElfCfi> cfi;
    std::map<uint64_t, std::pair<uint64_t, std::string>> syms;  // start -> (end, name)
  };

  Module& Get(sampler::ModuleId id) {
    auto it = modules_.find(id);
    if (it != modules_.end()) return it->second;
    Module& mod = modules_[id];
    const std::string& path = fixture_.modules().Get(id).path;
    auto image = module::ElfImage::Open(path);
    if (!image.ok()) return mod;
    auto cfi = ElfCfi::FromImage(*std::move(image));
    if (!cfi.ok()) return mod;
    mod.cfi = *std::move(cfi);
    int fd = open(path.c_str(), O_RDONLY);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    Elf_Scn* scn = nullptr;
    while (elf != nullptr && (scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) continue;
      if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      const size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 0; data != nullptr && i < n; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0) continue;
        const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (name == nullptr || *name == '\0') continue;
        mod.syms[sym.st_value] = {sym.st_value + std::max<uint64_t>(sym.st_size, 1), name};
      }
    }
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) close(fd);
    return mod;
  }

  const LoadedFixture& fixture_;
  std::map<sampler::ModuleId, Module> modules_;
};

}  // namespace nativeprof::unwind::testing

#endif  // NATIVEPROF_TESTS_UNIT_UNWIND_FIXTURE_SYMBOLS_H_
