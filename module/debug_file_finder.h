// Finds the separate debug file of a module the way GDB and elfutils do: by build-id under
// <debug dir>/.build-id/xx/yyyy.debug, then by .gnu_debuglink (checked against its CRC) next to the
// module, in its .debug/ subdirectory and under <debug dir>/<module dir>. Also unpacks
// MiniDebugInfo (.gnu_debugdata, an xz-compressed ELF). The one finder: used by the symbolizer's
// module loader (names, DWARF) and the unwinder's .debug_frame lookup, with the same roots
// (DefaultDebugDirs). Thread-safe except that returned ElfImages are not.
#ifndef NATIVEPROF_MODULE_DEBUG_FILE_FINDER_H_
#define NATIVEPROF_MODULE_DEBUG_FILE_FINDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "module/elf_image.h"

namespace nativeprof::module {

// The debug roots searched unless an option names others: the same for unwind/ (.debug_frame) and
// symbolize/ (names, DWARF).
inline const std::vector<std::string>& DefaultDebugDirs() {
  static const auto* dirs = new std::vector<std::string>{"/usr/lib/debug"};
  return *dirs;
}

struct DebugFileResult {
  std::unique_ptr<ElfImage> file;
  std::string how;  // "build-id" or "debuglink"
};

// Searches for the debug file of `module`, whose on-disk path is `module_path` (for debuglink's
// directory rules). `debug_dirs` are the global debug roots (normally {"/usr/lib/debug"}).
// Returns kNotFound (with the places tried in the message) when no matching file exists; a file
// whose build-id or CRC does not match is skipped, never returned.
absl::StatusOr<DebugFileResult> FindDebugFile(const ElfImage& module,
                                              const std::string& module_path,
                                              const std::vector<std::string>& debug_dirs);

// Decompresses an .xz stream, refusing to produce more than `max_output` bytes.
// Errors: kDataLoss (corrupt or truncated), kResourceExhausted (too large).
absl::StatusOr<std::string> XzDecompress(absl::string_view input, size_t max_output);

// Opens the MiniDebugInfo ELF embedded in `module`'s .gnu_debugdata. Errors: kNotFound when the
// section is absent, else those of XzDecompress and ElfImage::FromBytes.
absl::StatusOr<std::unique_ptr<ElfImage>> OpenMiniDebugInfo(ElfImage& module);

// CRC-32 as used by .gnu_debuglink (the zlib polynomial).
uint32_t DebugLinkCrc(absl::string_view bytes);

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_DEBUG_FILE_FINDER_H_
