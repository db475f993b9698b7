#include "base/elf_segments.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

std::vector<std::string> Segments(const std::string& path, uint32_t type, size_t max_bytes) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << path;
  std::vector<std::string> out;
  ForEachElfSegment(fd.get(), type, max_bytes, [&out](absl::string_view contents) {
    out.emplace_back(contents);
    return true;
  });
  return out;
}

// An i386 executable's headers: a PT_INTERP naming `interp`, then a PT_NOTE of 8 bytes that the
// file holds only `note_bytes_held` of.
std::string Elf32WithInterp(const std::string& interp, size_t note_bytes_held) {
  Elf32_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_386;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(eh);
  eh.e_ehsize = sizeof(eh);
  eh.e_phentsize = sizeof(Elf32_Phdr);
  eh.e_phnum = 2;
  Elf32_Phdr ph[2]{};
  const size_t data = sizeof(eh) + sizeof(ph);
  ph[0].p_type = PT_INTERP;
  ph[0].p_offset = data;
  ph[0].p_filesz = interp.size() + 1;
  ph[1].p_type = PT_NOTE;
  ph[1].p_offset = data + interp.size() + 1;
  ph[1].p_filesz = 8;
  std::string out(reinterpret_cast<const char*>(&eh), sizeof(eh));
  out.append(reinterpret_cast<const char*>(ph), sizeof(ph));
  out += interp;
  out.push_back('\0');
  out.append(note_bytes_held, 'n');
  return out;
}

TEST(ElfSegmentsTest, ReadsA32BitFilesInterpreter) {
  const std::string path = testing::MakeTempDir() + "/i386";
  std::ofstream(path, std::ios::binary) << Elf32WithInterp("/lib/ld-linux.so.2", 3);
  EXPECT_EQ(Segments(path, PT_INTERP, 4096),
            std::vector<std::string>{std::string("/lib/ld-linux.so.2\0", 19)});
  // The note runs past the end of the file: skipped, not read short.
  EXPECT_TRUE(Segments(path, PT_NOTE, 4096).empty());
  // Larger than asked for: skipped.
  EXPECT_TRUE(Segments(path, PT_INTERP, 8).empty());
}

TEST(ElfSegmentsTest, ReadsThisMachinesProgramInterpreter) {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  const std::vector<std::string> interp =
      Segments(std::string(self, static_cast<size_t>(n)), PT_INTERP, 4096);
  ASSERT_EQ(interp.size(), 1u);
  const std::string name = interp[0].substr(0, interp[0].find('\0'));
  EXPECT_EQ(name.front(), '/') << name;
  EXPECT_EQ(::access(name.c_str(), F_OK), 0) << name;
}

TEST(ElfSegmentsTest, NotElfHasNoSegments) {
  const std::string path = testing::MakeTempDir() + "/script";
  std::ofstream(path) << "#!/bin/sh\necho hi\n";
  EXPECT_TRUE(Segments(path, PT_INTERP, 4096).empty());
  const std::string cut = testing::MakeTempDir() + "/cut";
  std::ofstream(cut, std::ios::binary) << Elf32WithInterp("/x", 8).substr(0, 40);
  EXPECT_TRUE(Segments(cut, PT_INTERP, 4096).empty());
}

}  // namespace
}  // namespace nativeprof
