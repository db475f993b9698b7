// libFuzzer target for the symbolizer's ELF and debug-file loading: an arbitrary byte string is
// parsed as an ELF image (headers, notes, debuglink, PT_LOADs), its symbol tables are built and
// searched, an embedded MiniDebugInfo is decompressed (with a small output cap) and loaded the
// same way, and its DWARF is opened and queried for inline chains and producers. The symbol
// table's serialized form (the cache's) must look up alike, and the debug-file cache's rewrite
// (hidden sections, compact decompressed image) must not crash.
// Seeds (corpus/elf_loader_fuzzer/): a tiny -nostdlib program (two functions) built -Os with and
// without -g, stripped, with .gnu_debuglink, with MiniDebugInfo, with zlib-compressed DWARF, as a
// shared object, and its --only-keep-debug file (see docs/symbolization.md); regress-* are inputs
// that once failed (regress-compact-reserve: section sizes beyond the image, reserved up front;
// regress-compact-no-sections: a section count of 0 through the extended-count header;
// regress-oom-compressed-section: a compressed section claiming 2 GiB; see corpus/README.md).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "module/compressed_sections.h"
#include "module/debug_file_finder.h"
#include "module/elf_image.h"
#include "symbolize/dwarf_info.h"
#include "symbolize/symbol_table.h"

namespace {

using nativeprof::module::ElfImage;
using nativeprof::symbolize::DwarfFrame;
using nativeprof::symbolize::DwarfInfo;
using nativeprof::symbolize::SymbolTable;

void Exercise(ElfImage& file, int depth) {
  (void)file.build_id();
  (void)file.debug_link();
  SymbolTable table;
  table.AddElfSymbols(file, ".symtab");
  table.AddElfSymbols(file, ".dynsym");
  table.Finish();
  std::vector<uint64_t> probes;
  for (const auto& seg : file.loads()) {
    uint64_t svma = 0;
    if (file.FileOffsetToSvma(seg.offset, &svma)) probes.push_back(svma);
    probes.push_back(seg.vaddr + seg.filesz / 2);
  }
  for (const SymbolTable::Symbol& s : table.symbols()) {
    if (probes.size() > 64) break;
    probes.push_back(s.start + s.size / 2);
  }
  for (uint64_t p : probes) {
    const SymbolTable::Symbol* s = table.Lookup(p);
    if (s != nullptr && (p < s->start || p - s->start >= s->size)) __builtin_trap();
    if (s != nullptr) (void)table.Name(*s).size();
  }
  if (auto data = file.SectionData(".debug_info"); data.ok()) (void)data->size();

  if (std::unique_ptr<DwarfInfo> dwarf = DwarfInfo::Open(file)) {
    std::string evidence;
    dwarf->BuiltWithoutOptimization(&evidence);
    // Describe() reads line tables through libdw, which (elfutils 0.188) reads past the end of
    // malformed ones: DwarfInfo checks each unit's line program first (line_program_check.h),
    // and this target is what shows the check suffices.
    std::vector<DwarfFrame> frames;
    for (size_t i = 0; i < probes.size() && i < 16; ++i) {
      dwarf->Describe(probes[i], true, false, &frames);
    }
  }
  if (depth == 0) {
    if (auto raw = file.SectionData(".gnu_debugdata"); raw.ok()) {
      auto elf = nativeprof::module::XzDecompress(*raw, 1u << 20);
      if (elf.ok()) {
        auto inner = ElfImage::FromBytes(std::move(*elf), "fuzz [.gnu_debugdata]");
        if (inner.ok()) Exercise(**inner, depth + 1);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto file = ElfImage::FromBytes(bytes, "fuzz");
  if (file.ok()) Exercise(**file, 0);
  // What the debug-file cache does to an image: rewrite it decompressed, without some sections.
  auto compact = nativeprof::module::CompactDecompressedImage(
      bytes, 1u << 20, nativeprof::module::kAllCompressedSections,
      {".debug_loclists", ".debug_macro"});
  if (compact.ok()) {
    auto rewritten = ElfImage::FromBytes(std::move(compact->bytes), "fuzz [compact]");
    if (rewritten.ok()) (void)(*rewritten)->SectionData(".debug_info");
  }
  return 0;
}
