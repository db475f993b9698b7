#include "sampler/build_id_reader.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/string_view.h"
#include "base/elf_notes.h"
#include "base/scoped_fd.h"

namespace nativeprof::sampler {
namespace {

bool ReadAt(int fd, uint64_t offset, void* out, size_t len) {
  ssize_t n = ::pread(fd, out, len, static_cast<off_t>(offset));
  return n == static_cast<ssize_t>(len);
}

}  // namespace

std::vector<uint8_t> ReadElfBuildId(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  Elf64_Ehdr ehdr;
  if (!ReadAt(fd.get(), 0, &ehdr, sizeof(ehdr)) || std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 ||
      ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB ||
      ehdr.e_phentsize != sizeof(Elf64_Phdr) || ehdr.e_phnum > 256) {
    return {};
  }
  for (uint16_t i = 0; i < ehdr.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!ReadAt(fd.get(), ehdr.e_phoff + i * sizeof(ph), &ph, sizeof(ph))) return {};
    if (ph.p_type != PT_NOTE || ph.p_filesz > (1 << 16)) continue;
    std::vector<uint8_t> notes(ph.p_filesz);
    if (!ReadAt(fd.get(), ph.p_offset, notes.data(), notes.size())) continue;
    const absl::string_view id =
        FindGnuBuildId(absl::string_view(reinterpret_cast<const char*>(notes.data()), notes.size()));
    // MMAP2 records carry at most 20 bytes, so longer ids could never be matched against them.
    if (!id.empty() && id.size() <= 20) return std::vector<uint8_t>(id.begin(), id.end());
  }
  return {};
}

}  // namespace nativeprof::sampler
