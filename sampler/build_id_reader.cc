#include "sampler/build_id_reader.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/string_view.h"
#include "base/elf_notes.h"
#include "base/elf_segments.h"
#include "base/scoped_fd.h"

namespace nativeprof::sampler {

std::vector<uint8_t> ReadElfBuildId(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  std::vector<uint8_t> build_id;
  ForEachElfSegment(fd.get(), PT_NOTE, 1 << 16, [&build_id](absl::string_view notes) {
    const absl::string_view id = FindGnuBuildId(notes);
    // MMAP2 records carry at most 20 bytes, so longer ids could never be matched against them.
    if (id.empty() || id.size() > 20) return true;
    build_id.assign(id.begin(), id.end());
    return false;
  });
  return build_id;
}

}  // namespace nativeprof::sampler
