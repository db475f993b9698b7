// One opened ELF image (a file on disk, an fd held since the mapping was seen, or bytes in memory
// such as a decompressed MiniDebugInfo or the vdso), read through libelf. Answers the questions the
// symbolizer asks of an image: build-id, .gnu_debuglink, PT_LOAD layout (file offset -> svma),
// section contents (decompressing SHF_COMPRESSED ones). Every input is untrusted: malformed images
// produce errors, never crashes. Not thread-safe; used by the symbolizer after the target exits.
#ifndef NATIVEPROF_SYMBOLIZE_ELF_FILE_H_
#define NATIVEPROF_SYMBOLIZE_ELF_FILE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/scoped_fd.h"

namespace nativeprof::symbolize {

struct LoadSegment {
  uint64_t offset = 0;  // p_offset
  uint64_t vaddr = 0;   // p_vaddr
  uint64_t filesz = 0;
  uint64_t memsz = 0;
  bool executable = false;
};

struct DebugLink {
  std::string name;  // file name only, no directory
  uint32_t crc = 0;  // CRC-32 of the whole debug file
};

class ElfFile {
 public:
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  // Opens the file at `path`. Errors: the open(2) code (kNotFound, kPermissionDenied, ...), or
  // kInvalidArgument when it is not a 64- or 32-bit ELF file.
  static absl::StatusOr<std::unique_ptr<ElfFile>> Open(const std::string& path);
  // Takes ownership of an open fd (e.g. one held since the mapping was seen). `name` is for
  // messages. Errors: kInvalidArgument (not ELF), kInternal (libelf).
  static absl::StatusOr<std::unique_ptr<ElfFile>> FromFd(ScopedFd fd, std::string name);
  // Parses an image held in memory; the ElfFile keeps `bytes`. Errors: kInvalidArgument.
  static absl::StatusOr<std::unique_ptr<ElfFile>> FromBytes(std::string bytes, std::string name);

  Elf* elf() const { return elf_; }
  const std::string& name() const { return name_; }
  // Size in bytes of the whole image (file size or buffer size).
  uint64_t size() const { return size_; }
  // ET_EXEC, ET_DYN, ...
  uint16_t type() const { return ehdr_.e_type; }

  // The NT_GNU_BUILD_ID note as lower-case hex; empty when there is none.
  const std::string& build_id() const { return build_id_; }
  // The .gnu_debuglink section, if present and well-formed.
  std::optional<DebugLink> debug_link() const;

  const std::vector<LoadSegment>& loads() const { return loads_; }
  // Translates a file offset into the address the ELF's symbols use (svma) through the PT_LOAD
  // headers. Returns false when no loaded segment covers the offset.
  bool FileOffsetToSvma(uint64_t file_offset, uint64_t* svma) const;

  // Finds a section by name; returns nullptr when absent. Fills `shdr` when non-null.
  Elf_Scn* FindSection(absl::string_view name, GElf_Shdr* shdr) const;
  // Whether a section exists with data in the file (not SHT_NOBITS).
  bool HasSectionData(absl::string_view name) const;
  // Whether a section exists and is stored compressed (SHF_COMPRESSED).
  bool HasCompressedSection(absl::string_view name) const;
  // The bytes of a section, decompressed when SHF_COMPRESSED (zlib, or zstd when libelf has it).
  // The view lives as long as this ElfFile. Errors: kNotFound (absent or NOBITS),
  // kDataLoss (truncated or undecompressable).
  absl::StatusOr<absl::string_view> SectionData(absl::string_view name);

  // Compressed sections whose claimed size cannot be believed, or whose data does not inflate,
  // are left out of the image (no data), one message each: "section .debug_info of FILE claims N
  // bytes from M compressed: corrupt, skipped". The rest of the image serves as usual.
  const std::vector<std::string>& skipped_sections() const { return skipped_sections_; }

  // Larger decompressed sections are left out, bounding memory on bad input.
  static constexpr uint64_t kMaxDecompressedSectionBytes = uint64_t{1} << 30;

  // The contents of the whole image as it was read (before any decompressing rewrite), for CRC
  // checks and the debug-file cache. Errors: kInternal when unreadable.
  absl::StatusOr<absl::string_view> RawImage() const;

 private:
  ElfFile() = default;
  absl::Status Init();

  std::string name_;
  ScopedFd fd_;
  std::string bytes_;  // owned image when built from memory
  std::string original_bytes_;  // the image before a decompressing rewrite; empty without one
  Elf* elf_ = nullptr;
  GElf_Ehdr ehdr_{};
  uint64_t size_ = 0;
  std::string build_id_;
  std::vector<LoadSegment> loads_;
  size_t shstrndx_ = 0;
  std::vector<std::string> skipped_sections_;
};

// Reads the NT_GNU_BUILD_ID out of raw note bytes; empty when none. Exposed for tests.
std::string BuildIdFromNotes(absl::string_view notes);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_ELF_FILE_H_
