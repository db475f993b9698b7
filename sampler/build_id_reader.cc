#include "sampler/build_id_reader.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "base/scoped_fd.h"

namespace nativeprof::sampler {
namespace {

bool ReadAt(int fd, uint64_t offset, void* out, size_t len) {
  ssize_t n = ::pread(fd, out, len, static_cast<off_t>(offset));
  return n == static_cast<ssize_t>(len);
}

constexpr uint64_t Align4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

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
    uint64_t pos = 0;
    while (pos + sizeof(Elf64_Nhdr) <= notes.size()) {
      Elf64_Nhdr nh;
      std::memcpy(&nh, notes.data() + pos, sizeof(nh));
      const uint64_t name_at = pos + sizeof(nh);
      const uint64_t desc_at = name_at + Align4(nh.n_namesz);
      const uint64_t next = desc_at + Align4(nh.n_descsz);
      if (next > notes.size() || next <= pos) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          std::memcmp(notes.data() + name_at, "GNU", 4) == 0 && nh.n_descsz > 0 &&
          nh.n_descsz <= 20) {
        return std::vector<uint8_t>(notes.begin() + desc_at, notes.begin() + desc_at + nh.n_descsz);
      }
      pos = next;
    }
  }
  return {};
}

}  // namespace nativeprof::sampler
