// Debug files whose DWARF is compressed (Debian's -dbg and -dbgsym packages ship zlib-compressed
// .debug_* sections; libc6-dbg's inflate to ~20 MB) cost tens of milliseconds of CPU every time
// libdw opens them, which is most of a short profile's symbolization time. This keeps one
// decompressed copy per build-id in the cache ("debug" bucket), so that only the first profile
// that needs a file pays for inflating it; later ones map the copy. Used by ModuleSymbols after
// recording; not thread-safe (the cache itself tolerates concurrent processes).
#ifndef NATIVEPROF_MODULE_DEBUG_FILE_CACHE_H_
#define NATIVEPROF_MODULE_DEBUG_FILE_CACHE_H_

#include <cstdint>
#include <memory>

#include "base/cache_dir.h"
#include "module/elf_image.h"

namespace nativeprof::module {

// The cache bucket is trimmed to this size, least recently used copies first.
inline constexpr uint64_t kDebugFileCacheBytes = uint64_t{2} << 30;

// An image equal to `elf` except that no section is compressed, for libdw to read: the cached
// copy for `elf`'s build-id, or one built now and stored. nullptr when `elf`'s .debug_info is not
// compressed or it has no build-id (then there is nothing to gain or no safe key), or when the
// image cannot be decompressed; callers then read `elf` itself, as before.
std::unique_ptr<ElfImage> OpenDecompressedDebugFile(const ElfImage& elf, const CacheDir& cache);

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_DEBUG_FILE_CACHE_H_
