// One opened ELF image (a file on disk, an fd held since the mapping was seen, or bytes in memory
// such as a decompressed MiniDebugInfo or the vdso), read through libelf: the one reader of module
// files that unwind/ (CFI) and symbolize/ (names) both work from. Answers build-id,
// .gnu_debuglink, PT_LOAD layout (file offset <-> svma), .eh_frame_hdr, raw bytes by file offset
// and section contents (decompressing SHF_COMPRESSED ones). Every input is untrusted: malformed
// images produce errors, never crashes. Not thread-safe: one owner at a time (the unwinder on the
// drain thread, or the symbolizer after the target exits).
#ifndef NATIVEPROF_MODULE_ELF_IMAGE_H_
#define NATIVEPROF_MODULE_ELF_IMAGE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/scoped_fd.h"

namespace nativeprof::module {

struct LoadSegment {
  uint64_t offset = 0;  // p_offset
  uint64_t vaddr = 0;   // p_vaddr
  uint64_t filesz = 0;
  uint64_t memsz = 0;
  bool executable = false;
};

// Where a segment-like range lies in the file and in the ELF's own addresses.
struct FileRange {
  uint64_t svma = 0;    // p_vaddr
  uint64_t offset = 0;  // p_offset
  uint64_t size = 0;    // p_filesz
};

struct DebugLink {
  std::string name;  // file name only, no directory
  uint32_t crc = 0;  // CRC-32 of the whole debug file
};

class ElfImage {
 public:
  ~ElfImage();
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;

  // Opens the file at `path`. Errors: the open(2) code (kNotFound, kPermissionDenied, ...), or
  // kInvalidArgument when it is not a 64- or 32-bit ELF file.
  static absl::StatusOr<std::unique_ptr<ElfImage>> Open(const std::string& path);
  // Takes ownership of an open fd (e.g. one held since the mapping was seen). `name` is for
  // messages and is the path debuglink lookups start from. Errors: kInvalidArgument (not a
  // regular file, not ELF), the fstat(2) code.
  static absl::StatusOr<std::unique_ptr<ElfImage>> FromFd(ScopedFd fd, std::string name);
  // Parses an image held in memory; the ElfImage keeps `bytes`. Errors: kInvalidArgument.
  static absl::StatusOr<std::unique_ptr<ElfImage>> FromBytes(std::string bytes, std::string name);

  Elf* elf() const { return elf_; }
  const std::string& name() const { return name_; }
  // The directory of the file libelf reads this image from, as libdw finds it (the link of the
  // descriptor in /proc/self/fd): where libdw looks first for a split unit's .dwo file. "" for an
  // image read into memory (libdw then has no such directory).
  std::string FileDirectory() const;
  // Size in bytes of the whole image (file size or buffer size).
  uint64_t size() const { return size_; }
  // ET_EXEC, ET_DYN, ...
  uint16_t type() const { return ehdr_.e_type; }
  // st_dev / st_ino of the file it was read from; 0 for images built from memory. For the
  // identity check (module/module_opener.h).
  uint64_t dev() const { return dev_; }
  uint64_t inode() const { return inode_; }

  // The NT_GNU_BUILD_ID note as lower-case hex; empty when there is none.
  const std::string& build_id() const { return build_id_; }
  // The .gnu_debuglink section, if present and well-formed.
  std::optional<DebugLink> debug_link() const;

  const std::vector<LoadSegment>& loads() const { return loads_; }
  // Translates a file offset into the address the ELF's symbols and CFI use (svma) through the
  // PT_LOAD headers: the one translation for unwinding and naming. Returns false when no loaded
  // segment covers the offset (up to p_memsz: a mapping may reach into a .bss tail).
  bool FileOffsetToSvma(uint64_t file_offset, uint64_t* svma) const;
  // The inverse, within each segment's file bytes (p_filesz). False when no segment maps `svma`.
  bool SvmaToFileOffset(uint64_t svma, uint64_t* file_offset) const;
  // PT_GNU_EH_FRAME (.eh_frame_hdr), for libunwind's table search; nullopt when absent.
  const std::optional<FileRange>& eh_frame_hdr() const { return eh_frame_hdr_; }
  // The image's bytes at [file_offset, file_offset + size) as read (before any decompressing
  // rewrite); empty when the range is not inside the image. Lives as long as this ElfImage.
  std::span<const uint8_t> Bytes(uint64_t file_offset, uint64_t size) const;

  // Finds a section by name; returns nullptr when absent. Fills `shdr` when non-null.
  Elf_Scn* FindSection(absl::string_view name, GElf_Shdr* shdr) const;
  // Whether a section exists with data in the file (not SHT_NOBITS).
  bool HasSectionData(absl::string_view name) const;
  // Whether a section exists and is stored compressed (SHF_COMPRESSED).
  bool HasCompressedSection(absl::string_view name) const;
  // The bytes of a section, decompressed when SHF_COMPRESSED (zlib, or zstd when libelf has it).
  // The view lives as long as this ElfImage. Errors: kNotFound (absent or NOBITS),
  // kDataLoss (truncated or undecompressable).
  absl::StatusOr<absl::string_view> SectionData(absl::string_view name);
  // The bytes of a section as libelf holds them now: decompressed only once something has
  // (SectionData, or dwarf_begin_elf, which decompresses the .debug_* sections in place); empty
  // when absent, SHT_NOBITS or unreadable. For readers that run after libdw opened the image.
  absl::string_view LoadedSectionData(absl::string_view name) const;

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
  ElfImage() = default;
  absl::Status Init();

  std::string name_;
  ScopedFd fd_;
  std::string bytes_;  // owned image when built from memory
  std::string original_bytes_;  // the image before a decompressing rewrite; empty without one
  Elf* elf_ = nullptr;
  GElf_Ehdr ehdr_{};
  uint64_t size_ = 0;
  uint64_t dev_ = 0, inode_ = 0;
  absl::string_view raw_;  // RawImage(), for Bytes()
  std::optional<FileRange> eh_frame_hdr_;
  std::string build_id_;
  std::vector<LoadSegment> loads_;
  size_t shstrndx_ = 0;
  std::vector<std::string> skipped_sections_;
};

// Reads the NT_GNU_BUILD_ID out of raw note bytes; empty when none. Exposed for tests.
std::string BuildIdFromNotes(absl::string_view notes);

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_ELF_IMAGE_H_
