#include "symbolize/zstd_sections.h"

#include <elf.h>
#include <zstd.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

namespace nativeprof::symbolize {
namespace {

// The section headers of an ELF64 LE image, bounds-checked; empty if the image is not one.
struct SectionTable {
  uint64_t offset = 0;      // e_shoff
  uint64_t entry_size = 0;  // e_shentsize
  uint64_t count = 0;
};

bool ReadSectionTable(absl::string_view image, SectionTable* table) {
  Elf64_Ehdr ehdr;
  if (image.size() < sizeof(ehdr)) return false;
  std::memcpy(&ehdr, image.data(), sizeof(ehdr));
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
      ehdr.e_ident[EI_DATA] != ELFDATA2LSB || ehdr.e_shentsize != sizeof(Elf64_Shdr) ||
      ehdr.e_shoff == 0 || ehdr.e_shoff >= image.size()) {
    return false;
  }
  uint64_t count = ehdr.e_shnum;
  if (count == 0) {
    // More than SHN_LORESERVE sections: the real count is in section 0's sh_size.
    if (image.size() - ehdr.e_shoff < sizeof(Elf64_Shdr)) return false;
    Elf64_Shdr first;
    std::memcpy(&first, image.data() + ehdr.e_shoff, sizeof(first));
    count = first.sh_size;
  }
  if (count > (image.size() - ehdr.e_shoff) / sizeof(Elf64_Shdr)) return false;
  *table = SectionTable{ehdr.e_shoff, sizeof(Elf64_Shdr), count};
  return true;
}

bool ReadZstdHeader(absl::string_view image, const Elf64_Shdr& shdr, Elf64_Chdr* chdr) {
  if (!(shdr.sh_flags & SHF_COMPRESSED) || shdr.sh_type == SHT_NOBITS) return false;
  if (shdr.sh_offset > image.size() || shdr.sh_size > image.size() - shdr.sh_offset ||
      shdr.sh_size < sizeof(Elf64_Chdr)) {
    return false;
  }
  std::memcpy(chdr, image.data() + shdr.sh_offset, sizeof(*chdr));
  return chdr->ch_type == ELFCOMPRESS_ZSTD;
}

}  // namespace

bool HasZstdSections(absl::string_view image) {
  SectionTable table;
  if (!ReadSectionTable(image, &table)) return false;
  for (uint64_t i = 0; i < table.count; ++i) {
    Elf64_Shdr shdr;
    std::memcpy(&shdr, image.data() + table.offset + i * table.entry_size, sizeof(shdr));
    Elf64_Chdr chdr;
    if (ReadZstdHeader(image, shdr, &chdr)) return true;
  }
  return false;
}

absl::StatusOr<std::string> DecompressZstdSections(absl::string_view image,
                                                   uint64_t max_section_bytes) {
  SectionTable table;
  if (!ReadSectionTable(image, &table)) {
    return absl::DataLossError("not a 64-bit little-endian ELF image with section headers");
  }
  std::string out(image.data(), image.size());
  for (uint64_t i = 0; i < table.count; ++i) {
    const uint64_t header_at = table.offset + i * table.entry_size;
    Elf64_Shdr shdr;
    std::memcpy(&shdr, out.data() + header_at, sizeof(shdr));
    Elf64_Chdr chdr;
    if (!ReadZstdHeader(image, shdr, &chdr) || chdr.ch_size > max_section_bytes) continue;
    const char* payload = image.data() + shdr.sh_offset + sizeof(Elf64_Chdr);
    const size_t payload_size = shdr.sh_size - sizeof(Elf64_Chdr);
    // Align the appended data as the section requires (bounded: alignment is attacker data).
    const uint64_t align = chdr.ch_addralign == 0 || chdr.ch_addralign > 4096 ? 8 : chdr.ch_addralign;
    const uint64_t at = (out.size() + align - 1) / align * align;
    out.resize(at + chdr.ch_size);
    const size_t got = ZSTD_decompress(out.data() + at, chdr.ch_size, payload, payload_size);
    if (ZSTD_isError(got) || got != chdr.ch_size) {
      return absl::DataLossError(absl::StrCat(
          "section ", i, ": corrupt zstd data (",
          ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs from its header", ")"));
    }
    shdr.sh_offset = at;
    shdr.sh_size = chdr.ch_size;
    shdr.sh_addralign = align;
    shdr.sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
    std::memcpy(out.data() + header_at, &shdr, sizeof(shdr));
  }
  return out;
}

}  // namespace nativeprof::symbolize
