#include "module/elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/elf_notes.h"
#include "base/file_util.h"
#include "base/errno_status.h"
#include "base/status_macros.h"
#include "module/compressed_sections.h"

namespace nativeprof::module {
namespace {

void EnsureLibelfVersion() {
  static const bool initialized = [] {
    elf_version(EV_CURRENT);
    return true;
  }();
  (void)initialized;
}

uint64_t Align4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

}  // namespace

std::string BuildIdFromNotes(absl::string_view notes) {
  return absl::BytesToHexString(FindGnuBuildId(notes));
}

ElfImage::~ElfImage() {
  if (elf_ != nullptr) elf_end(elf_);
}

absl::StatusOr<std::unique_ptr<ElfImage>> ElfImage::Open(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(absl::StrCat("open ", path));
  return FromFd(std::move(fd), path);
}

absl::StatusOr<std::unique_ptr<ElfImage>> ElfImage::FromFd(ScopedFd fd, std::string name) {
  EnsureLibelfVersion();
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(absl::StrCat("fstat ", name));
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is not a regular file"));
  }
  std::unique_ptr<ElfImage> file(new ElfImage());
  file->name_ = std::move(name);
  file->size_ = static_cast<uint64_t>(st.st_size);
  file->dev_ = static_cast<uint64_t>(st.st_dev);
  file->inode_ = static_cast<uint64_t>(st.st_ino);
  file->fd_ = std::move(fd);
  file->elf_ = elf_begin(file->fd_.get(), ELF_C_READ_MMAP, nullptr);
  if (file->elf_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(file->name_, ": libelf: ", elf_errmsg(-1)));
  }
  NP_RETURN_IF_ERROR(file->Init());
  // libelf/libdw 0.188 cannot decompress zstd sections, and libelf sizes a zlib section's buffer
  // from its header's claim: rewrite the image in memory when it has either kind, with zstd
  // sections decompressed and implausible ones emptied (module/compressed_sections.h).
  absl::StatusOr<absl::string_view> image = file->RawImage();
  if (image.ok() && NeedsDecompressing(*image, kZstdSections, kMaxDecompressedSectionBytes)) {
    NP_ASSIGN_OR_RETURN(std::unique_ptr<ElfImage> rewritten,
                        FromBytes(std::string(*image), std::move(file->name_)));
    // Still the file it was read from, for the identity check.
    rewritten->dev_ = file->dev_;
    rewritten->inode_ = file->inode_;
    return rewritten;
  }
  return file;
}

std::string ElfImage::FileDirectory() const {
  if (!fd_.valid()) return "";
  const std::string path = ReadLinkOrEmpty(absl::StrCat("/proc/self/fd/", fd_.get()));
  return path.empty() ? "" : DirectoryOf(path);
}

absl::StatusOr<std::unique_ptr<ElfImage>> ElfImage::FromBytes(std::string bytes, std::string name) {
  EnsureLibelfVersion();
  std::unique_ptr<ElfImage> file(new ElfImage());
  file->name_ = std::move(name);
  file->bytes_ = std::move(bytes);
  file->size_ = file->bytes_.size();
  if (NeedsDecompressing(file->bytes_, kZstdSections, kMaxDecompressedSectionBytes)) {
    absl::StatusOr<RewrittenImage> plain =
        DecompressSections(file->bytes_, kMaxDecompressedSectionBytes, kZstdSections);
    if (plain.ok()) {
      file->original_bytes_ = std::move(file->bytes_);
      file->bytes_ = std::move(plain->bytes);
      file->size_ = file->bytes_.size();
      for (const SkippedSection& skipped : plain->skipped) {
        file->skipped_sections_.push_back(absl::StrCat("section ", skipped.name, " of ",
                                                       file->name_, " ", skipped.reason,
                                                       ", skipped"));
      }
    }
  }
  file->elf_ = elf_memory(file->bytes_.data(), file->bytes_.size());
  if (file->elf_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(file->name_, ": libelf: ", elf_errmsg(-1)));
  }
  NP_RETURN_IF_ERROR(file->Init());
  return file;
}

absl::Status ElfImage::Init() {
  if (elf_kind(elf_) != ELF_K_ELF || gelf_getehdr(elf_, &ehdr_) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(name_, " is not an ELF file"));
  }
  if (elf_getshdrstrndx(elf_, &shstrndx_) != 0) shstrndx_ = 0;

  size_t phnum = 0;
  if (elf_getphdrnum(elf_, &phnum) == 0) {
    for (size_t i = 0; i < phnum && i < 4096; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf_, static_cast<int>(i), &phdr) == nullptr) continue;
      if (phdr.p_type == PT_LOAD) {
        loads_.push_back(LoadSegment{phdr.p_offset, phdr.p_vaddr, phdr.p_filesz, phdr.p_memsz,
                                     (phdr.p_flags & PF_X) != 0});
      } else if (phdr.p_type == PT_GNU_EH_FRAME) {
        eh_frame_hdr_ = FileRange{phdr.p_vaddr, phdr.p_offset, phdr.p_filesz};
      } else if (phdr.p_type == PT_NOTE && build_id_.empty()) {
        Elf_Data* data = elf_getdata_rawchunk(elf_, phdr.p_offset, phdr.p_filesz, ELF_T_NHDR);
        if (data != nullptr && data->d_buf != nullptr) {
          build_id_ = BuildIdFromNotes(
              absl::string_view(static_cast<const char*>(data->d_buf), data->d_size));
        }
      }
    }
  }
  if (absl::StatusOr<absl::string_view> raw = RawImage(); raw.ok()) raw_ = *raw;
  if (build_id_.empty()) {
    // Separate debug files keep their notes as sections; so do some objects without phdrs.
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf_, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) continue;
      Elf_Data* data = elf_rawdata(scn, nullptr);
      if (data == nullptr || data->d_buf == nullptr) continue;
      build_id_ = BuildIdFromNotes(
          absl::string_view(static_cast<const char*>(data->d_buf), data->d_size));
      if (!build_id_.empty()) break;
    }
  }
  return absl::OkStatus();
}

bool ElfImage::FileOffsetToSvma(uint64_t file_offset, uint64_t* svma) const {
  for (const LoadSegment& seg : loads_) {
    // The mapping may extend to the page end past p_filesz (e.g. .bss tail); accept memsz.
    uint64_t span = seg.memsz > seg.filesz ? seg.memsz : seg.filesz;
    if (file_offset >= seg.offset && file_offset - seg.offset < span) {
      *svma = file_offset - seg.offset + seg.vaddr;
      return true;
    }
  }
  return false;
}

bool ElfImage::SvmaToFileOffset(uint64_t svma, uint64_t* file_offset) const {
  for (const LoadSegment& seg : loads_) {
    if (svma >= seg.vaddr && svma - seg.vaddr < seg.filesz) {
      *file_offset = svma - seg.vaddr + seg.offset;
      return true;
    }
  }
  return false;
}

std::span<const uint8_t> ElfImage::Bytes(uint64_t file_offset, uint64_t size) const {
  if (file_offset > raw_.size() || size > raw_.size() - file_offset) return {};
  return {reinterpret_cast<const uint8_t*>(raw_.data()) + file_offset, size};
}

Elf_Scn* ElfImage::FindSection(absl::string_view name, GElf_Shdr* out) const {
  if (shstrndx_ == 0) return nullptr;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf_, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* sname = elf_strptr(elf_, shstrndx_, shdr.sh_name);
    if (sname != nullptr && name == sname) {
      if (out != nullptr) *out = shdr;
      return scn;
    }
  }
  return nullptr;
}

bool ElfImage::HasSectionData(absl::string_view name) const {
  GElf_Shdr shdr;
  return FindSection(name, &shdr) != nullptr && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0;
}

bool ElfImage::HasCompressedSection(absl::string_view name) const {
  GElf_Shdr shdr;
  return FindSection(name, &shdr) != nullptr && shdr.sh_type != SHT_NOBITS &&
         (shdr.sh_flags & SHF_COMPRESSED) != 0;
}

namespace {
// The section's data as libelf holds it now; nullopt when libelf cannot read it.
std::optional<absl::string_view> HeldData(Elf_Scn* scn) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) return std::nullopt;
  if (data->d_buf == nullptr) return absl::string_view();
  return absl::string_view(static_cast<const char*>(data->d_buf), data->d_size);
}
}  // namespace

absl::StatusOr<absl::string_view> ElfImage::SectionData(absl::string_view name) {
  GElf_Shdr shdr;
  Elf_Scn* scn = FindSection(name, &shdr);
  if (scn == nullptr || shdr.sh_type == SHT_NOBITS) {
    return absl::NotFoundError(absl::StrCat(name_, " has no ", name, " section data"));
  }
  if ((shdr.sh_flags & SHF_COMPRESSED) != 0) {
    // elf_compress replaces the section's data with the decompressed bytes, owned by libelf.
    if (elf_compress(scn, 0, 0) < 0) {
      return absl::DataLossError(
          absl::StrCat(name_, ": cannot decompress ", name, ": ", elf_errmsg(-1)));
    }
  }
  std::optional<absl::string_view> data = HeldData(scn);
  if (!data.has_value()) {
    return absl::DataLossError(absl::StrCat(name_, ": cannot read ", name, ": ", elf_errmsg(-1)));
  }
  return *data;
}

absl::string_view ElfImage::LoadedSectionData(absl::string_view name) const {
  GElf_Shdr shdr;
  Elf_Scn* scn = FindSection(name, &shdr);
  if (scn == nullptr || shdr.sh_type == SHT_NOBITS) return {};
  return HeldData(scn).value_or(absl::string_view());
}

std::optional<DebugLink> ElfImage::debug_link() const {
  GElf_Shdr shdr;
  Elf_Scn* scn = FindSection(".gnu_debuglink", &shdr);
  if (scn == nullptr || shdr.sh_type == SHT_NOBITS) return std::nullopt;
  Elf_Data* data = elf_rawdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return std::nullopt;
  absl::string_view bytes(static_cast<const char*>(data->d_buf), data->d_size);
  size_t nul = bytes.find('\0');
  if (nul == absl::string_view::npos || nul == 0) return std::nullopt;
  uint64_t crc_pos = Align4(nul + 1);
  if (crc_pos + 4 > bytes.size()) return std::nullopt;
  DebugLink link;
  link.name = std::string(bytes.substr(0, nul));
  if (link.name.find('/') != std::string::npos) return std::nullopt;
  std::memcpy(&link.crc, bytes.data() + crc_pos, 4);
  // The CRC is stored in the file's byte order.
  bool file_le = ehdr_.e_ident[EI_DATA] == ELFDATA2LSB;
  if (!file_le) link.crc = __builtin_bswap32(link.crc);
  return link;
}

absl::StatusOr<absl::string_view> ElfImage::RawImage() const {
  if (!original_bytes_.empty()) return absl::string_view(original_bytes_);
  size_t size = 0;
  char* raw = elf_rawfile(elf_, &size);
  if (raw == nullptr) {
    return absl::InternalError(absl::StrCat(name_, ": cannot read the image: ", elf_errmsg(-1)));
  }
  return absl::string_view(raw, size);
}

}  // namespace nativeprof::module
