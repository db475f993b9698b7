#include "module/debug_file_cache.h"

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "module/compressed_sections.h"

namespace nativeprof::module {
namespace {

// A cached copy is trusted only if it is the same build and really has its DWARF decompressed.
bool UsableCopy(const ElfImage& copy, const std::string& build_id) {
  return copy.build_id() == build_id && copy.HasSectionData(".debug_info") &&
         !copy.HasCompressedSection(".debug_info");
}

}  // namespace

std::unique_ptr<ElfImage> OpenDecompressedDebugFile(const ElfImage& elf, const CacheDir& cache) {
  if (!elf.HasCompressedSection(".debug_info") || elf.build_id().empty()) return nullptr;
  const std::string name = absl::StrCat(elf.build_id(), ".debug");
  const std::string path = cache.PathOf("debug", name);
  if (absl::StatusOr<std::unique_ptr<ElfImage>> cached = ElfImage::Open(path); cached.ok()) {
    if (UsableCopy(**cached, elf.build_id())) {
      CacheDir::Touch(path);
      return *std::move(cached);
    }
    Logger("symbolize")->debug("{}: cached copy is not usable; rebuilding it", path);
  }

  absl::StatusOr<absl::string_view> image = elf.RawImage();
  if (!image.ok()) return nullptr;
  // Location lists, macros and name indexes serve debuggers, not symbolization: leaving them out
  // saves inflating a quarter of libc6-dbg's DWARF.
  absl::StatusOr<RewrittenImage> plain = CompactDecompressedImage(
      *image, ElfImage::kMaxDecompressedSectionBytes, kAllCompressedSections,
      {".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo", ".debug_pubnames",
       ".debug_pubtypes", ".debug_gnu_pubnames", ".debug_gnu_pubtypes", ".debug_names"});
  if (!plain.ok()) {
    Logger("symbolize")->debug("{}: {}", elf.name(), plain.status().message());
    return nullptr;
  }
  if (!plain->skipped.empty()) {
    // A section that does not inflate would be missing from every later run's copy without a
    // word: read the original instead, whose reader reports it.
    Logger("symbolize")->debug("{}: section {} {}; not cached", elf.name(),
                               plain->skipped[0].name, plain->skipped[0].reason);
    return nullptr;
  }
  if (absl::Status st = cache.Put("debug", name, plain->bytes, kDebugFileCacheBytes); st.ok()) {
    absl::StatusOr<std::unique_ptr<ElfImage>> stored = ElfImage::Open(path);
    if (stored.ok() && UsableCopy(**stored, elf.build_id())) return *std::move(stored);
  } else {
    Logger("symbolize")->debug("debug file cache: {}", st.message());
  }
  // No cache to keep it in: this run still reads the decompressed image from memory.
  absl::StatusOr<std::unique_ptr<ElfImage>> in_memory =
      ElfImage::FromBytes(std::move(plain->bytes), elf.name());
  if (!in_memory.ok() || !UsableCopy(**in_memory, elf.build_id())) return nullptr;
  return *std::move(in_memory);
}

}  // namespace nativeprof::module
