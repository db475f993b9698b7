// Compressed ELF sections (SHF_COMPRESSED: zlib as written by `--compress-debug-sections`, zstd as
// written by `--compress-debug-sections=zstd`) rewritten into a plain image. Two users: Debian 12's
// elfutils 0.188 decompresses only zlib, so ElfFile rewrites zstd images in memory before libelf
// and libdw see them; and the debug-file cache (debug_file_cache.h) stores images with every
// section already decompressed so that later runs skip inflating DWARF. Pure; any thread.
#ifndef NATIVEPROF_SYMBOLIZE_COMPRESSED_SECTIONS_H_
#define NATIVEPROF_SYMBOLIZE_COMPRESSED_SECTIONS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

// Which compression formats an operation applies to: a mask of these bits.
inline constexpr uint32_t kZlibSections = 1u << 1;  // 1 << ELFCOMPRESS_ZLIB
inline constexpr uint32_t kZstdSections = 1u << 2;  // 1 << ELFCOMPRESS_ZSTD
inline constexpr uint32_t kAllCompressedSections = kZlibSections | kZstdSections;

// True when `image` is a 64-bit little-endian ELF with at least one section compressed in one of
// the `formats`.
bool HasCompressedSections(absl::string_view image, uint32_t formats);

// A copy of `image` in which every section compressed in one of the `formats` is decompressed,
// appended at the end of the image, and its section header pointed at it with SHF_COMPRESSED
// cleared. Sections that would decompress to more than `max_section_bytes` are left compressed.
// Errors: kDataLoss when the headers or a compressed stream are corrupt.
absl::StatusOr<std::string> DecompressSections(absl::string_view image, uint64_t max_section_bytes,
                                               uint32_t formats);

// A new image holding `image`'s sections, each compressed one of the `formats` decompressed, laid
// out back to back with nothing else: no program headers and none of the compressed payloads, so
// it is as small as the plain DWARF can be. For reading sections (DWARF, notes) only: without
// program headers it no longer maps file offsets to addresses. Sections named in `omit` keep a
// header but no data, and lose the leading character of their name (".debug_loclists" reads as
// "debug_loclists"), so that libdw, which looks sections up by exact name, ignores them.
// Errors: kDataLoss when the headers, a section's bounds or a compressed stream are corrupt.
absl::StatusOr<std::string> CompactDecompressedImage(
    absl::string_view image, uint64_t max_section_bytes, uint32_t formats,
    std::initializer_list<absl::string_view> omit = {});

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_COMPRESSED_SECTIONS_H_
