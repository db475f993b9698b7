// Compressed ELF sections (SHF_COMPRESSED: zlib as written by `--compress-debug-sections`, zstd as
// written by `--compress-debug-sections=zstd`) rewritten into a plain image. Two users: Debian 12's
// elfutils 0.188 decompresses only zlib, so ElfImage rewrites zstd images in memory before libelf
// and libdw see them; and the debug-file cache (debug_file_cache.h) stores images with every
// section already decompressed so that later runs skip inflating DWARF. Pure; any thread.
#ifndef NATIVEPROF_MODULE_COMPRESSED_SECTIONS_H_
#define NATIVEPROF_MODULE_COMPRESSED_SECTIONS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof::module {

// Which compression formats an operation applies to: a mask of these bits.
inline constexpr uint32_t kZlibSections = 1u << 1;  // 1 << ELFCOMPRESS_ZLIB
inline constexpr uint32_t kZstdSections = 1u << 2;  // 1 << ELFCOMPRESS_ZSTD
inline constexpr uint32_t kAllCompressedSections = kZlibSections | kZstdSections;

// True when `image` is a 64-bit little-endian ELF with at least one section compressed in one of
// the `formats`.
bool HasCompressedSections(absl::string_view image, uint32_t formats);

// Why a compressed section's claimed size cannot be believed, as a phrase that follows the
// section's name ("claims 2147483648 bytes from 6,000 compressed: corrupt"); empty when it can.
// A claim is only a number in a header until the data is inflated, and decompressors size their
// output from it: it must fit what `payload` can expand to (deflate at most 1032:1; zstd its
// frames' stated content size, and at most 32768:1, an RLE block's ratio) and `max_section_bytes`.
// `type` is the Elf64_Chdr's ch_type.
std::string CompressedSizeProblem(uint32_t type, absl::string_view payload, uint64_t claimed_size,
                                  uint64_t max_section_bytes);

// True when DecompressSections would change `image`: a section compressed in one of the
// `formats`, or a compressed section of any format whose claimed size fails CompressedSizeProblem.
bool NeedsDecompressing(absl::string_view image, uint32_t formats, uint64_t max_section_bytes);

// A compressed section that a rewrite left out, and why.
struct SkippedSection {
  std::string name;    // ".debug_info"; "[N]" (its index) when the name table is unreadable
  std::string reason;  // follows the name: "claims N bytes from M compressed: corrupt"
};

// An image rewritten with its compressed sections decompressed, and the sections left out of it.
struct RewrittenImage {
  std::string bytes;
  std::vector<SkippedSection> skipped;
};

// A copy of `image` in which every section compressed in one of the `formats` is decompressed,
// appended at the end of the image, and its section header pointed at it with SHF_COMPRESSED
// cleared. A compressed section (of any format) whose claimed size fails CompressedSizeProblem,
// or whose stream turns out corrupt, is emptied (SHT_NOBITS) and listed in `skipped`, so that no
// later reader (libelf sizes its buffer from the claim too) trusts it; the rest still serves.
// Errors: kDataLoss when the image is not an ELF64 LE image with a valid section table.
absl::StatusOr<RewrittenImage> DecompressSections(absl::string_view image,
                                                  uint64_t max_section_bytes, uint32_t formats);

// A new image holding `image`'s sections, each compressed one of the `formats` decompressed, laid
// out back to back with nothing else: no program headers and none of the compressed payloads, so
// it is as small as the plain DWARF can be. For reading sections (DWARF, notes) only: without
// program headers it no longer maps file offsets to addresses. Sections named in `omit` keep a
// header but no data, and lose the leading character of their name (".debug_loclists" reads as
// "debug_loclists"), so that libdw, which looks sections up by exact name, ignores them.
// Compressed sections that cannot be believed or inflated are emptied and listed in `skipped`, as
// in DecompressSections.
// Errors: kDataLoss when the headers or a plain section's bounds are corrupt.
absl::StatusOr<RewrittenImage> CompactDecompressedImage(
    absl::string_view image, uint64_t max_section_bytes, uint32_t formats,
    std::initializer_list<absl::string_view> omit = {});

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_COMPRESSED_SECTIONS_H_
