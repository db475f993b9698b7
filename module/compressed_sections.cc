#include "module/compressed_sections.h"

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

namespace nativeprof::module {
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

// The compression header of a section compressed in a format nativeprof knows (zlib, zstd); false
// for a plain section, an unknown format (libelf refuses those without allocating) or a header that
// lies outside the image (libelf refuses that too).
bool ReadCompressionHeader(absl::string_view image, const Elf64_Shdr& shdr, Elf64_Chdr* chdr) {
  if (!(shdr.sh_flags & SHF_COMPRESSED) || shdr.sh_type == SHT_NOBITS) return false;
  if (shdr.sh_offset > image.size() || shdr.sh_size > image.size() - shdr.sh_offset ||
      shdr.sh_size < sizeof(Elf64_Chdr)) {
    return false;
  }
  std::memcpy(chdr, image.data() + shdr.sh_offset, sizeof(*chdr));
  return chdr->ch_type == ELFCOMPRESS_ZLIB || chdr->ch_type == ELFCOMPRESS_ZSTD;
}

absl::string_view Payload(absl::string_view image, const Elf64_Shdr& shdr) {
  return image.substr(shdr.sh_offset + sizeof(Elf64_Chdr), shdr.sh_size - sizeof(Elf64_Chdr));
}

// Inflates `payload` into exactly `out_size` bytes at `out`. The message of an error is a phrase
// that follows the section's name.
absl::Status Decompress(uint32_t type, absl::string_view payload, char* out, size_t out_size) {
  if (type == ELFCOMPRESS_ZSTD) {
    const size_t got = ZSTD_decompress(out, out_size, payload.data(), payload.size());
    if (ZSTD_isError(got)) {
      return absl::DataLossError(
          absl::StrCat("holds corrupt zstd data (", ZSTD_getErrorName(got), ")"));
    }
    if (got != out_size) return absl::DataLossError("inflates to another size than it claims");
    return absl::OkStatus();
  }
  // libdeflate rather than zlib: the output size is known up front, which is all its
  // whole-buffer decoder needs, and it inflates libc6-dbg's DWARF in well under half the time.
  // One decompressor per call: it is a small allocation next to megabytes of output.
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> decompressor(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (decompressor == nullptr) return absl::ResourceExhaustedError("is too large to inflate now");
  size_t got = 0;
  const libdeflate_result rc = libdeflate_zlib_decompress(
      decompressor.get(), payload.data(), payload.size(), out, out_size, &got);
  if (rc == LIBDEFLATE_SHORT_OUTPUT || rc == LIBDEFLATE_INSUFFICIENT_SPACE ||
      (rc == LIBDEFLATE_SUCCESS && got != out_size)) {
    return absl::DataLossError("inflates to another size than it claims");
  }
  if (rc != LIBDEFLATE_SUCCESS) return absl::DataLossError("holds corrupt zlib data");
  return absl::OkStatus();
}

// Alignment for a decompressed section's data (bounded: alignment is attacker data).
uint64_t DataAlignment(const Elf64_Chdr& chdr) {
  return chdr.ch_addralign == 0 || chdr.ch_addralign > 4096 ? 8 : chdr.ch_addralign;
}

// Decompresses the section with header `shdr` and compression header `chdr` of `image` into `out`
// at offset `at`, growing `out`, and points `shdr` at the plain data. On error `out` is as it was.
absl::Status InflateInto(absl::string_view image, const Elf64_Chdr& chdr, uint64_t at,
                         Elf64_Shdr* shdr, std::string* out) {
  const size_t before = out->size();
  out->resize(at + chdr.ch_size);
  if (absl::Status st = Decompress(chdr.ch_type, Payload(image, *shdr), out->data() + at,
                                   chdr.ch_size);
      !st.ok()) {
    out->resize(before);
    return st;
  }
  shdr->sh_offset = at;
  shdr->sh_size = chdr.ch_size;
  shdr->sh_addralign = DataAlignment(chdr);
  shdr->sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
  return absl::OkStatus();
}

// A section that a rewrite leaves out keeps its header, with no data, so that section indexes
// (symbols' st_shndx, sh_link) stay valid.
void EmptySection(uint64_t at, Elf64_Shdr* shdr) {
  shdr->sh_type = SHT_NOBITS;
  shdr->sh_offset = at;
  shdr->sh_size = 0;
  shdr->sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
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

// The name at `offset` of the name table; empty when it is not a NUL-terminated string in it.
absl::string_view NameAt(absl::string_view names, uint32_t offset) {
  if (offset >= names.size()) return {};
  const absl::string_view rest = names.substr(offset);
  const size_t nul = rest.find('\0');
  return nul == absl::string_view::npos ? absl::string_view() : rest.substr(0, nul);
}

bool NameIn(absl::string_view names, uint32_t offset, std::initializer_list<absl::string_view> set) {
  const absl::string_view name = NameAt(names, offset);
  return !name.empty() && std::find(set.begin(), set.end(), name) != set.end();
}

// What a rewrite does with one section.
struct SectionPlan {
  enum class Kind { kCopy, kInflate, kSkip } kind = Kind::kCopy;
  Elf64_Chdr chdr{};
  std::string reason;  // for kSkip
};

SectionPlan PlanSection(absl::string_view image, const Elf64_Shdr& shdr, uint32_t formats,
                        uint64_t max_section_bytes) {
  SectionPlan plan;
  if (!ReadCompressionHeader(image, shdr, &plan.chdr)) return plan;
  plan.reason = CompressedSizeProblem(plan.chdr.ch_type, Payload(image, shdr), plan.chdr.ch_size,
                                      max_section_bytes);
  if (!plan.reason.empty()) {
    plan.kind = SectionPlan::Kind::kSkip;
  } else if ((formats & (1u << plan.chdr.ch_type)) != 0) {
    plan.kind = SectionPlan::Kind::kInflate;
  }
  return plan;
}

// Carries out a kInflate or kSkip plan for the section with header `shdr`, appending its data to
// `out`; a stream that fails to inflate turns the plan into kSkip.
void ApplyPlan(absl::string_view image, absl::string_view names, uint64_t index, SectionPlan plan,
               Elf64_Shdr* shdr, RewrittenImage* result) {
  std::string& out = result->bytes;
  const uint64_t align = DataAlignment(plan.chdr);
  const uint64_t at = (out.size() + align - 1) / align * align;
  if (plan.kind == SectionPlan::Kind::kInflate) {
    absl::Status st = InflateInto(image, plan.chdr, at, shdr, &out);
    if (st.ok()) return;
    plan.reason = std::string(st.message());
  }
  EmptySection(out.size(), shdr);
  absl::string_view name = NameAt(names, shdr->sh_name);
  result->skipped.push_back(SkippedSection{
      name.empty() ? absl::StrCat("[", index, "]") : std::string(name), std::move(plan.reason)});
}

// The total content size the zstd frames of `payload` state: ZSTD_CONTENTSIZE_ERROR when it is not
// a sequence of whole frames, ZSTD_CONTENTSIZE_UNKNOWN when a frame does not say. (The library's
// own ZSTD_findDecompressedSize is not in its stable API.)
unsigned long long ZstdContentSize(absl::string_view payload) {
  unsigned long long total = 0;
  bool known = true;
  while (!payload.empty()) {
    const unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
    const size_t frame = ZSTD_findFrameCompressedSize(payload.data(), payload.size());
    if (content == ZSTD_CONTENTSIZE_ERROR || ZSTD_isError(frame) || frame == 0) {
      return ZSTD_CONTENTSIZE_ERROR;
    }
    if (content == ZSTD_CONTENTSIZE_UNKNOWN) {
      known = false;
    } else {
      if (content > ZSTD_CONTENTSIZE_ERROR - 1 - total) return ZSTD_CONTENTSIZE_ERROR;
      total += content;
    }
    payload.remove_prefix(frame);
  }
  return known ? total : ZSTD_CONTENTSIZE_UNKNOWN;
}

constexpr uint64_t kDeflateMaxRatio = 1032;  // 258 bytes from a 2-bit length/distance pair
// A zstd RLE block: one byte repeated up to the 128 KiB block size, behind a 3-byte header.
constexpr uint64_t kZstdMaxRatio = 32768;
constexpr uint64_t kHeaderSlack = 64;  // frame and stream headers of a tiny payload

}  // namespace

std::string CompressedSizeProblem(uint32_t type, absl::string_view payload, uint64_t claimed_size,
                                  uint64_t max_section_bytes) {
  uint64_t ratio = kDeflateMaxRatio;
  if (type == ELFCOMPRESS_ZSTD) {
    ratio = kZstdMaxRatio;
    const unsigned long long content = ZstdContentSize(payload);
    if (content == ZSTD_CONTENTSIZE_ERROR) return "holds no valid zstd frames: corrupt";
    if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != claimed_size) {
      return absl::StrCat("claims ", claimed_size, " bytes, its zstd frames ", content,
                          ": corrupt");
    }
  } else if (type != ELFCOMPRESS_ZLIB) {
    return absl::StrCat("uses unknown compression type ", type);
  }
  // payload.size() is within an image in memory, far below 2^64 / ratio.
  if (claimed_size > payload.size() * ratio + kHeaderSlack) {
    return absl::StrCat("claims ", claimed_size, " bytes from ", payload.size(),
                        " compressed: corrupt");
  }
  if (claimed_size > max_section_bytes) {
    return absl::StrCat("claims ", claimed_size, " bytes, more than the ", max_section_bytes,
                        "-byte limit for one section");
  }
  return "";
}

bool HasCompressedSections(absl::string_view image, uint32_t formats) {
  SectionTable table;
  if (!ReadSectionTable(image, &table)) return false;
  for (uint64_t i = 0; i < table.count; ++i) {
    Elf64_Chdr chdr;
    if (ReadCompressionHeader(image, SectionHeader(image, table, i), &chdr) &&
        (formats & (1u << chdr.ch_type)) != 0) {
      return true;
    }
  }
  return false;
}

bool NeedsDecompressing(absl::string_view image, uint32_t formats, uint64_t max_section_bytes) {
  SectionTable table;
  if (!ReadSectionTable(image, &table)) return false;
  for (uint64_t i = 0; i < table.count; ++i) {
    const SectionPlan plan =
        PlanSection(image, SectionHeader(image, table, i), formats, max_section_bytes);
    if (plan.kind != SectionPlan::Kind::kCopy) return true;
  }
  return false;
}

absl::StatusOr<RewrittenImage> DecompressSections(absl::string_view image,
                                                  uint64_t max_section_bytes, uint32_t formats) {
  SectionTable table;
  if (!ReadSectionTable(image, &table)) {
    return absl::DataLossError("not a 64-bit little-endian ELF image with section headers");
  }
  const absl::string_view names = SectionNames(image, table);
  std::vector<SectionPlan> plans(table.count);
  // One allocation for the whole result: debug images grow by tens of megabytes.
  uint64_t total = image.size();
  for (uint64_t i = 0; i < table.count; ++i) {
    plans[i] = PlanSection(image, SectionHeader(image, table, i), formats, max_section_bytes);
    if (plans[i].kind == SectionPlan::Kind::kInflate) {
      total += plans[i].chdr.ch_size + DataAlignment(plans[i].chdr);
    }
  }
  RewrittenImage result;
  // Every claim in `total` is bounded by its payload, but a stream can still be corrupt: reserve
  // no more than one section's cap beyond the image.
  result.bytes.reserve(std::min<uint64_t>(total, image.size() + max_section_bytes));
  result.bytes.assign(image.data(), image.size());
  for (uint64_t i = 0; i < table.count; ++i) {
    if (plans[i].kind == SectionPlan::Kind::kCopy) continue;
    Elf64_Shdr shdr = SectionHeader(image, table, i);
    ApplyPlan(image, names, i, std::move(plans[i]), &shdr, &result);
    std::memcpy(result.bytes.data() + table.offset + i * table.entry_size, &shdr, sizeof(shdr));
  }
  return result;
}

absl::StatusOr<RewrittenImage> CompactDecompressedImage(
    absl::string_view image, uint64_t max_section_bytes, uint32_t formats,
    std::initializer_list<absl::string_view> omit) {
  SectionTable table;
  if (!ReadSectionTable(image, &table) || table.count == 0) {
    return absl::DataLossError("not a 64-bit little-endian ELF image with section headers");
  }
  const absl::string_view names = SectionNames(image, table);
  std::vector<Elf64_Shdr> headers(table.count);
  std::vector<SectionPlan> plans(table.count);
  uint64_t total = sizeof(Elf64_Ehdr) + table.count * sizeof(Elf64_Shdr);
  headers[0] = SectionHeader(image, table, 0);
  for (uint64_t i = 1; i < table.count; ++i) {
    Elf64_Shdr& shdr = headers[i];
    shdr = SectionHeader(image, table, i);
    if (shdr.sh_type != SHT_NOBITS && NameIn(names, shdr.sh_name, omit)) {
      // libdw finds sections by exact name: without its leading dot the empty remainder is
      // invisible to it.
      shdr.sh_name += 1;
      shdr.sh_type = SHT_NOBITS;
      shdr.sh_size = 0;
      shdr.sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
    }
    if (shdr.sh_type == SHT_NOBITS) continue;
    plans[i] = PlanSection(image, shdr, formats, max_section_bytes);
    total += (plans[i].kind == SectionPlan::Kind::kInflate
                  ? plans[i].chdr.ch_size
                  : std::min<uint64_t>(shdr.sh_size, image.size())) +
             4096;
  }
  RewrittenImage result;
  std::string& out = result.bytes;
  // Every claim in `total` is bounded by its payload, but a stream can still be corrupt: reserve
  // no more than one section's cap beyond the image.
  out.reserve(std::min<uint64_t>(total, image.size() + max_section_bytes));
  out.assign(image.data(), sizeof(Elf64_Ehdr));
  uint64_t copied = 0;
  for (uint64_t i = 1; i < table.count; ++i) {
    Elf64_Shdr& shdr = headers[i];
    if (shdr.sh_type == SHT_NOBITS) {
      shdr.sh_offset = out.size();
    } else if (plans[i].kind != SectionPlan::Kind::kCopy) {
      ApplyPlan(image, names, i, std::move(plans[i]), &shdr, &result);
    } else {
      if (shdr.sh_offset > image.size() || shdr.sh_size > image.size() - shdr.sh_offset) {
        return absl::DataLossError(absl::StrCat("section ", i, " lies outside the image"));
      }
      // Real sections do not overlap; copying one range many times would multiply the image.
      copied += shdr.sh_size;
      if (copied > image.size()) return absl::DataLossError("sections overlap");
      const uint64_t align =
          shdr.sh_addralign == 0 || shdr.sh_addralign > 4096 ? 1 : shdr.sh_addralign;
      out.resize((out.size() + align - 1) / align * align);
      out.append(image.data() + shdr.sh_offset, shdr.sh_size);
      shdr.sh_offset = out.size() - shdr.sh_size;
    }
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
  return result;
}

}  // namespace nativeprof::module
