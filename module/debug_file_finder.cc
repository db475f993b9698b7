#include "module/debug_file_finder.h"

#include <lzma.h>
#include <unistd.h>
#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"

namespace nativeprof::module {
namespace {

// MiniDebugInfo is a symbol table only; anything bigger than this is not one.
constexpr size_t kMaxMiniDebugInfoBytes = 256u << 20;

}  // namespace

uint32_t DebugLinkCrc(absl::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large files in chunks.
  while (!bytes.empty()) {
    size_t n = std::min<size_t>(bytes.size(), 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}

absl::StatusOr<DebugFileResult> FindDebugFile(const ElfImage& module,
                                              const std::string& module_path,
                                              const std::vector<std::string>& debug_dirs) {
  std::vector<std::string> tried;
  const std::string& build_id = module.build_id();
  if (build_id.size() > 2) {
    for (const std::string& root : debug_dirs) {
      std::string path =
          absl::StrCat(root, "/.build-id/", build_id.substr(0, 2), "/", build_id.substr(2), ".debug");
      tried.push_back(path);
      if (::access(path.c_str(), R_OK) != 0) continue;
      absl::StatusOr<std::unique_ptr<ElfImage>> file = ElfImage::Open(path);
      if (!file.ok() || (*file)->build_id() != build_id) continue;
      return DebugFileResult{std::move(*file), "build-id"};
    }
  }
  std::optional<DebugLink> link = module.debug_link();
  if (link.has_value()) {
    std::string dir = DirectoryOf(module_path);
    std::vector<std::string> candidates = {absl::StrCat(dir, "/", link->name),
                                           absl::StrCat(dir, "/.debug/", link->name)};
    for (const std::string& root : debug_dirs) {
      candidates.push_back(absl::StrCat(root, dir, "/", link->name));
    }
    for (const std::string& path : candidates) {
      if (path == module_path) continue;  // debuglink naming the module itself
      tried.push_back(path);
      if (::access(path.c_str(), R_OK) != 0) continue;
      absl::StatusOr<std::unique_ptr<ElfImage>> file = ElfImage::Open(path);
      if (!file.ok()) continue;
      absl::StatusOr<absl::string_view> image = (*file)->RawImage();
      if (!image.ok() || DebugLinkCrc(*image) != link->crc) continue;
      if (!build_id.empty() && !(*file)->build_id().empty() && (*file)->build_id() != build_id) {
        continue;
      }
      return DebugFileResult{std::move(*file), "debuglink"};
    }
  }
  if (tried.empty()) {
    return absl::NotFoundError(absl::StrCat(module_path, " has neither a build-id nor a debuglink"));
  }
  return absl::NotFoundError(absl::StrCat("no debug file for ", module_path, " (tried ",
                                          absl::StrJoin(tried, ", "), ")"));
}

absl::StatusOr<std::string> XzDecompress(absl::string_view input, size_t max_output) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, 256u << 20, LZMA_CONCATENATED) != LZMA_OK) {
    return absl::InternalError("lzma_stream_decoder failed");
  }
  std::string out;
  out.resize(std::min<size_t>(std::max<size_t>(input.size() * 4, 4096), max_output));
  strm.next_in = reinterpret_cast<const uint8_t*>(input.data());
  strm.avail_in = input.size();
  strm.next_out = reinterpret_cast<uint8_t*>(out.data());
  strm.avail_out = out.size();
  absl::Status status;
  while (true) {
    lzma_ret ret = lzma_code(&strm, LZMA_FINISH);
    if (ret == LZMA_STREAM_END) break;
    if (ret == LZMA_OK || ret == LZMA_BUF_ERROR) {
      if (strm.avail_out == 0) {
        if (out.size() >= max_output) {
          status = absl::ResourceExhaustedError("xz data decompresses beyond the size limit");
          break;
        }
        size_t used = out.size();
        out.resize(std::min(max_output, used * 2));
        strm.next_out = reinterpret_cast<uint8_t*>(out.data()) + used;
        strm.avail_out = out.size() - used;
        continue;
      }
      if (ret == LZMA_BUF_ERROR) {
        status = absl::DataLossError("xz data is truncated");
        break;
      }
      continue;
    }
    status = absl::DataLossError(absl::StrCat("xz data is corrupt (lzma error ", ret, ")"));
    break;
  }
  size_t produced = out.size() - strm.avail_out;
  lzma_end(&strm);
  if (!status.ok()) return status;
  out.resize(produced);
  return out;
}

absl::StatusOr<std::unique_ptr<ElfImage>> OpenMiniDebugInfo(ElfImage& module) {
  GElf_Shdr shdr;
  if (module.FindSection(".gnu_debugdata", &shdr) == nullptr) {
    return absl::NotFoundError(absl::StrCat(module.name(), " has no .gnu_debugdata"));
  }
  absl::StatusOr<absl::string_view> data = module.SectionData(".gnu_debugdata");
  if (!data.ok()) return data.status();
  absl::StatusOr<std::string> elf = XzDecompress(*data, kMaxMiniDebugInfoBytes);
  if (!elf.ok()) return elf.status();
  return ElfImage::FromBytes(std::move(*elf), absl::StrCat(module.name(), " [.gnu_debugdata]"));
}

}  // namespace nativeprof::module
