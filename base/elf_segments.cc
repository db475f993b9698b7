#include "base/elf_segments.h"

#include <elf.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace nativeprof {
namespace {

bool ReadAt(int fd, uint64_t offset, void* out, size_t len) {
  return ::pread(fd, out, len, static_cast<off_t>(offset)) == static_cast<ssize_t>(len);
}

struct Segment {
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t file_size = 0;
};

// One program header of either class, widened.
template <typename Phdr>
bool ReadSegment(int fd, uint64_t at, Segment* out) {
  Phdr ph;
  if (!ReadAt(fd, at, &ph, sizeof(ph))) return false;
  *out = {ph.p_type, ph.p_offset, ph.p_filesz};
  return true;
}

}  // namespace

void ForEachElfSegment(int fd, uint32_t type, size_t max_bytes,
                       absl::FunctionRef<bool(absl::string_view contents)> visit) {
  unsigned char ident[EI_NIDENT];
  if (!ReadAt(fd, 0, ident, sizeof(ident)) || std::memcmp(ident, ELFMAG, SELFMAG) != 0 ||
      ident[EI_DATA] != ELFDATA2LSB) {
    return;
  }
  const bool is64 = ident[EI_CLASS] == ELFCLASS64;
  if (!is64 && ident[EI_CLASS] != ELFCLASS32) return;
  uint64_t table = 0;
  size_t count = 0;
  if (is64) {
    Elf64_Ehdr eh;
    if (!ReadAt(fd, 0, &eh, sizeof(eh)) || eh.e_phentsize != sizeof(Elf64_Phdr)) return;
    table = eh.e_phoff;
    count = eh.e_phnum;
  } else {
    Elf32_Ehdr eh;
    if (!ReadAt(fd, 0, &eh, sizeof(eh)) || eh.e_phentsize != sizeof(Elf32_Phdr)) return;
    table = eh.e_phoff;
    count = eh.e_phnum;
  }
  const size_t entry = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  std::string contents;
  for (size_t i = 0; i < count; ++i) {
    Segment s;
    const uint64_t at = table + i * entry;
    if (!(is64 ? ReadSegment<Elf64_Phdr>(fd, at, &s) : ReadSegment<Elf32_Phdr>(fd, at, &s))) {
      return;  // the table runs past the end of the file
    }
    if (s.type != type || s.file_size > max_bytes) continue;
    contents.resize(static_cast<size_t>(s.file_size));
    if (!ReadAt(fd, s.offset, contents.data(), contents.size())) continue;
    if (!visit(contents)) return;
  }
}

}  // namespace nativeprof
