#include "symbolize/compressed_sections.h"

#include <elf.h>
#include <libdeflate.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif
static_assert(ELFCOMPRESS_ZLIB == 1);

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

Elf64_Shdr SectionHeader(absl::string_view image, const SectionTable& table, uint64_t i) {
  Elf64_Shdr shdr;
  std::memcpy(&shdr, image.data() + table.offset + i * table.entry_size, sizeof(shdr));
  return shdr;
}

// The compression header of a section compressed in one of the `formats`; false otherwise.
bool ReadCompressionHeader(absl::string_view image, const Elf64_Shdr& shdr, uint32_t formats,
                           Elf64_Chdr* chdr) {
  if (!(shdr.sh_flags & SHF_COMPRESSED) || shdr.sh_type == SHT_NOBITS) return false;
  if (shdr.sh_offset > image.size() || shdr.sh_size > image.size() - shdr.sh_offset ||
      shdr.sh_size < sizeof(Elf64_Chdr)) {
    return false;
  }
  std::memcpy(chdr, image.data() + shdr.sh_offset, sizeof(*chdr));
  return chdr->ch_type < 32 && (formats & (1u << chdr->ch_type)) != 0;
}

// Inflates `payload` into exactly `out_size` bytes at `out`.
absl::Status Decompress(uint32_t type, const char* payload, size_t payload_size, char* out,
                        size_t out_size) {
  if (type == ELFCOMPRESS_ZSTD) {
    const size_t got = ZSTD_decompress(out, out_size, payload, payload_size);
    if (ZSTD_isError(got)) {
      return absl::DataLossError(absl::StrCat("corrupt zstd data (", ZSTD_getErrorName(got), ")"));
    }
    if (got != out_size) return absl::DataLossError("zstd data: size differs from its header");
    return absl::OkStatus();
  }
  // libdeflate rather than zlib: the output size is known up front, which is all its
  // whole-buffer decoder needs, and it inflates libc6-dbg's DWARF in well under half the time.
  // One decompressor per call: it is a small allocation next to megabytes of output.
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> decompressor(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (decompressor == nullptr) return absl::ResourceExhaustedError("out of memory for inflating");
  size_t got = 0;
  const libdeflate_result rc =
      libdeflate_zlib_decompress(decompressor.get(), payload, payload_size, out, out_size, &got);
  if (rc == LIBDEFLATE_SHORT_OUTPUT || rc == LIBDEFLATE_INSUFFICIENT_SPACE ||
      (rc == LIBDEFLATE_SUCCESS && got != out_size)) {
    return absl::DataLossError("zlib data: size differs from its header");
  }
  if (rc != LIBDEFLATE_SUCCESS) return absl::DataLossError("corrupt zlib data");
  return absl::OkStatus();
}

// Alignment for a decompressed section's data (bounded: alignment is attacker data).
uint64_t DataAlignment(const Elf64_Chdr& chdr) {
  return chdr.ch_addralign == 0 || chdr.ch_addralign > 4096 ? 8 : chdr.ch_addralign;
}

// Decompresses section `i` (header `shdr`, compression header `chdr`) of `image` into `out` at
// offset `at`, growing `out`, and points `shdr` at the plain data.
absl::Status InflateInto(absl::string_view image, uint64_t i, const Elf64_Chdr& chdr, uint64_t at,
                         Elf64_Shdr* shdr, std::string* out) {
  out->resize(at + chdr.ch_size);
  const char* payload = image.data() + shdr->sh_offset + sizeof(Elf64_Chdr);
  if (absl::Status st = Decompress(chdr.ch_type, payload, shdr->sh_size - sizeof(Elf64_Chdr),
                                   out->data() + at, chdr.ch_size);
      !st.ok()) {
    return absl::DataLossError(absl::StrCat("section ", i, ": ", st.message()));
  }
  shdr->sh_offset = at;
  shdr->sh_size = chdr.ch_size;
  shdr->sh_addralign = DataAlignment(chdr);
  shdr->sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
  return absl::OkStatus();
}

// The section name string table of an ELF64 LE image; empty when absent or out of bounds.
absl::string_view SectionNames(absl::string_view image, const SectionTable& table) {
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, image.data(), sizeof(ehdr));
  uint64_t index = ehdr.e_shstrndx;
  if (index == SHN_XINDEX) index = SectionHeader(image, table, 0).sh_link;
  if (index == 0 || index >= table.count) return {};
  const Elf64_Shdr strtab = SectionHeader(image, table, index);
  if (strtab.sh_type == SHT_NOBITS || strtab.sh_offset > image.size() ||
      strtab.sh_size > image.size() - strtab.sh_offset) {
    return {};
  }
  return image.substr(strtab.sh_offset, strtab.sh_size);
}

bool NameIn(absl::string_view names, uint32_t offset, std::initializer_list<absl::string_view> set) {
  if (offset >= names.size()) return false;
  absl::string_view name = names.substr(offset);
  name = name.substr(0, name.find('\0'));
  return std::find(set.begin(), set.end(), name) != set.end();
}

}  // namespace

bool HasCompressedSections(absl::string_view image, uint32_t formats) {
  SectionTable table;
  if (!ReadSectionTable(image, &table)) return false;
  for (uint64_t i = 0; i < table.count; ++i) {
    Elf64_Chdr chdr;
    if (ReadCompressionHeader(image, SectionHeader(image, table, i), formats, &chdr)) return true;
  }
  return false;
}

absl::StatusOr<std::string> DecompressSections(absl::string_view image, uint64_t max_section_bytes,
                                               uint32_t formats) {
  SectionTable table;
  if (!ReadSectionTable(image, &table)) {
    return absl::DataLossError("not a 64-bit little-endian ELF image with section headers");
  }
  // One allocation for the whole result: debug images grow by tens of megabytes.
  uint64_t total = image.size();
  for (uint64_t i = 0; i < table.count; ++i) {
    Elf64_Chdr chdr;
    if (ReadCompressionHeader(image, SectionHeader(image, table, i), formats, &chdr) &&
        chdr.ch_size <= max_section_bytes) {
      total += chdr.ch_size + DataAlignment(chdr);
    }
  }
  std::string out;
  // Sizes are claims until the data is inflated: reserve no more than one section's cap beyond the
  // image (each resize below grows by one section that is checked before the next).
  out.reserve(std::min<uint64_t>(total, image.size() + max_section_bytes));
  out.assign(image.data(), image.size());
  for (uint64_t i = 0; i < table.count; ++i) {
    const uint64_t header_at = table.offset + i * table.entry_size;
    Elf64_Shdr shdr = SectionHeader(image, table, i);
    Elf64_Chdr chdr;
    if (!ReadCompressionHeader(image, shdr, formats, &chdr) || chdr.ch_size > max_section_bytes) {
      continue;
    }
    const uint64_t align = DataAlignment(chdr);
    const uint64_t at = (out.size() + align - 1) / align * align;
    NP_RETURN_IF_ERROR(InflateInto(image, i, chdr, at, &shdr, &out));
    std::memcpy(out.data() + header_at, &shdr, sizeof(shdr));
  }
  return out;
}

absl::StatusOr<std::string> CompactDecompressedImage(
    absl::string_view image, uint64_t max_section_bytes, uint32_t formats,
    std::initializer_list<absl::string_view> omit) {
  SectionTable table;
  if (!ReadSectionTable(image, &table) || table.count == 0) {
    return absl::DataLossError("not a 64-bit little-endian ELF image with section headers");
  }
  const absl::string_view names = omit.size() > 0 ? SectionNames(image, table) : "";
  uint64_t total = sizeof(Elf64_Ehdr) + table.count * sizeof(Elf64_Shdr);
  for (uint64_t i = 1; i < table.count; ++i) {
    const Elf64_Shdr shdr = SectionHeader(image, table, i);
    if (shdr.sh_type == SHT_NOBITS) continue;
    Elf64_Chdr chdr;
    const bool inflate = ReadCompressionHeader(image, shdr, formats, &chdr) &&
                         chdr.ch_size <= max_section_bytes;
    total += (inflate ? chdr.ch_size : std::min<uint64_t>(shdr.sh_size, image.size())) + 4096;
  }
  std::string out;
  // Sizes are claims until the data is inflated: reserve no more than one section's cap beyond the
  // image (each resize below grows by one section that is checked before the next).
  out.reserve(std::min<uint64_t>(total, image.size() + max_section_bytes));
  out.assign(image.data(), sizeof(Elf64_Ehdr));
  std::vector<Elf64_Shdr> headers(table.count);
  uint64_t copied = 0;
  headers[0] = SectionHeader(image, table, 0);
  for (uint64_t i = 1; i < table.count; ++i) {
    Elf64_Shdr shdr = SectionHeader(image, table, i);
    if (shdr.sh_type != SHT_NOBITS && NameIn(names, shdr.sh_name, omit)) {
      // libdw finds sections by exact name: without its leading dot the empty remainder is
      // invisible to it.
      shdr.sh_name += 1;
      shdr.sh_type = SHT_NOBITS;
      shdr.sh_size = 0;
      shdr.sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
    }
    Elf64_Chdr chdr;
    const bool inflate = shdr.sh_type != SHT_NOBITS &&
                         ReadCompressionHeader(image, shdr, formats, &chdr) &&
                         chdr.ch_size <= max_section_bytes;
    const uint64_t align = inflate ? DataAlignment(chdr)
                                   : (shdr.sh_addralign == 0 || shdr.sh_addralign > 4096
                                          ? 1
                                          : shdr.sh_addralign);
    const uint64_t at = (out.size() + align - 1) / align * align;
    if (shdr.sh_type == SHT_NOBITS) {
      shdr.sh_offset = at;
    } else if (inflate) {
      NP_RETURN_IF_ERROR(InflateInto(image, i, chdr, at, &shdr, &out));
    } else {
      if (shdr.sh_offset > image.size() || shdr.sh_size > image.size() - shdr.sh_offset) {
        return absl::DataLossError(absl::StrCat("section ", i, " lies outside the image"));
      }
      // Real sections do not overlap; copying one range many times would multiply the image.
      copied += shdr.sh_size;
      if (copied > image.size()) return absl::DataLossError("sections overlap");
      out.resize(at);
      out.append(image.data() + shdr.sh_offset, shdr.sh_size);
      shdr.sh_offset = at;
    }
    headers[i] = shdr;
  }
  const uint64_t shoff = (out.size() + 7) / 8 * 8;
  out.resize(shoff);
  out.append(reinterpret_cast<const char*>(headers.data()), headers.size() * sizeof(Elf64_Shdr));
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, out.data(), sizeof(ehdr));
  ehdr.e_phoff = 0;
  ehdr.e_phnum = 0;
  ehdr.e_shoff = shoff;
  std::memcpy(out.data(), &ehdr, sizeof(ehdr));
  return out;
}

}  // namespace nativeprof::symbolize
