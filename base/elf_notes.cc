#include "base/elf_notes.h"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace nativeprof {
namespace {

constexpr uint64_t Align4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

}  // namespace

absl::string_view FindGnuBuildId(absl::string_view notes) {
  // Elf32_Nhdr and Elf64_Nhdr have the same layout: namesz, descsz, type, each 4 bytes.
  uint64_t pos = 0;
  while (notes.size() - pos >= 12) {
    uint32_t namesz, descsz, type;
    std::memcpy(&namesz, notes.data() + pos, 4);
    std::memcpy(&descsz, notes.data() + pos + 4, 4);
    std::memcpy(&type, notes.data() + pos + 8, 4);
    pos += 12;
    const uint64_t name_end = pos + Align4(namesz);
    // The last note's descriptor may lack its padding.
    if (name_end > notes.size() || name_end + descsz > notes.size()) return {};
    if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(notes.data() + pos, "GNU\0", 4) == 0 &&
        descsz > 0 && descsz <= 64) {
      return notes.substr(name_end, descsz);
    }
    const uint64_t desc_end = name_end + Align4(descsz);
    if (desc_end >= notes.size()) break;
    pos = desc_end;
  }
  return {};
}

}  // namespace nativeprof
