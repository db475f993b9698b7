// zstd-compressed ELF sections (SHF_COMPRESSED with ELFCOMPRESS_ZSTD, as written by
// `objcopy --compress-debug-sections=zstd` or `ld --compress-debug-sections=zstd`). Debian 12's
// elfutils 0.188 decompresses only zlib sections, so ElfFile rewrites such an image in memory
// before libelf and libdw see it. Pure; any thread.
#ifndef NATIVEPROF_SYMBOLIZE_ZSTD_SECTIONS_H_
#define NATIVEPROF_SYMBOLIZE_ZSTD_SECTIONS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

// True when `image` is a 64-bit little-endian ELF with at least one zstd-compressed section.
bool HasZstdSections(absl::string_view image);

// A copy of `image` in which every zstd-compressed section is decompressed, appended at the end of
// the image, and its section header pointed at it with SHF_COMPRESSED cleared. Sections that
// would decompress to more than `max_section_bytes` are left compressed. Errors: kDataLoss when
// the headers or a zstd frame are corrupt.
absl::StatusOr<std::string> DecompressZstdSections(absl::string_view image,
                                                   uint64_t max_section_bytes);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_ZSTD_SECTIONS_H_
