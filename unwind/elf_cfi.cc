#include "unwind/elf_cfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace nativeprof::unwind {
namespace {

void InitLibelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

// Copies libdw's ops into the module's arena; returns the index of the first one.
uint32_t CopyOps(const Dwarf_Op* ops, size_t nops, std::vector<CfiOp>* arena) {
  const uint32_t begin = static_cast<uint32_t>(arena->size());
  for (size_t i = 0; i < nops; ++i) arena->push_back({ops[i].atom, ops[i].number, ops[i].number2});
  return begin;
}

bool FitsInt32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

}  // namespace

ElfCfi::~ElfCfi() {
  if (eh_cfi_ != nullptr) dwarf_cfi_end(eh_cfi_);
  if (debug_dwarf_ != nullptr) dwarf_end(debug_dwarf_);  // owns debug_cfi_
  if (debug_elf_ != nullptr && debug_elf_ != elf_) elf_end(debug_elf_);
  if (elf_ != nullptr) elf_end(elf_);
}

absl::StatusOr<std::unique_ptr<ElfCfi>> ElfCfi::Open(const std::string& path,
                                                     const std::string& build_id) {
  InitLibelf();
  std::unique_ptr<ElfCfi> m(new ElfCfi());
  m->path_ = path;
  m->build_id_ = build_id;
  m->fd_.Reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!m->fd_.valid()) return ErrnoError(absl::StrCat("open ", path));
  struct stat st;
  if (fstat(m->fd_.get(), &st) != 0) return ErrnoError(absl::StrCat("fstat ", path));
  if (!S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not an ELF file"));
  }
  void* p = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, m->fd_.get(), 0);
  if (p == MAP_FAILED) return ErrnoError(absl::StrCat("mmap ", path));
  m->map_ = ScopedMmap(p, st.st_size);
  m->data_ = static_cast<const uint8_t*>(p);
  m->size_ = st.st_size;
  absl::Status s = m->Init();
  if (!s.ok()) return s;
  return m;
}

absl::StatusOr<std::unique_ptr<ElfCfi>> ElfCfi::FromImage(std::string image) {
  InitLibelf();
  std::unique_ptr<ElfCfi> m(new ElfCfi());
  m->path_ = "[image]";
  m->image_ = std::move(image);
  m->data_ = reinterpret_cast<const uint8_t*>(m->image_.data());
  m->size_ = m->image_.size();
  absl::Status s = m->Init();
  if (!s.ok()) return s;
  return m;
}

absl::Status ElfCfi::Init() {
  // elf_memory wants a mutable pointer but ELF_C_READ_MEMORY never writes.
  elf_ = elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(data_)), size_);
  if (elf_ == nullptr || elf_kind(elf_) != ELF_K_ELF) {
    return absl::InvalidArgumentError(absl::StrCat(path_, " is not an ELF file"));
  }
  size_t phnum = 0;
  if (elf_getphdrnum(elf_, &phnum) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": no program headers"));
  }
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf_, static_cast<int>(i), &ph) == nullptr) continue;
    if (ph.p_type == PT_LOAD) segments_.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
    if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_hdr_vaddr_ = ph.p_vaddr;
      eh_hdr_offset_ = ph.p_offset;
      eh_hdr_size_ = ph.p_filesz;
    }
  }
  eh_cfi_ = dwarf_getcfi_elf(elf_);  // null when the module has no .eh_frame
  return absl::OkStatus();
}

bool ElfCfi::FileOffsetToVaddr(uint64_t file_offset, uint64_t* vaddr) const {
  for (const Segment& s : segments_) {
    if (file_offset >= s.offset && file_offset < s.offset + s.filesz) {
      *vaddr = file_offset - s.offset + s.vaddr;
      return true;
    }
  }
  return false;
}

bool ElfCfi::VaddrToFileOffset(uint64_t vaddr, uint64_t* file_offset) const {
  for (const Segment& s : segments_) {
    if (vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz) {
      *file_offset = vaddr - s.vaddr + s.offset;
      return true;
    }
  }
  return false;
}

bool ElfCfi::EhFrameHdr(uint64_t* vaddr, uint64_t* file_offset, uint64_t* size) const {
  if (eh_hdr_size_ == 0) return false;
  *vaddr = eh_hdr_vaddr_;
  *file_offset = eh_hdr_offset_;
  *size = eh_hdr_size_;
  return true;
}

std::span<const uint8_t> ElfCfi::Bytes(uint64_t file_offset, uint64_t size) const {
  if (file_offset > size_ || size > size_ - file_offset) return {};
  return {data_ + file_offset, size};
}

namespace {

// The section `name` of `elf` (its header in `shdr`), or nullptr.
Elf_Scn* FindSection(Elf* elf, std::string_view name, GElf_Shdr* shdr) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    if (gelf_getshdr(scn, shdr) == nullptr) continue;
    const char* n = elf_strptr(elf, shstrndx, shdr->sh_name);
    if (n != nullptr && name == n) return scn;
  }
  return nullptr;
}

// Whether `elf` has a section `name` with bytes in the file (not SHT_NOBITS, not empty).
bool HasSectionData(Elf* elf, std::string_view name) {
  GElf_Shdr sh;
  return FindSection(elf, name, &sh) != nullptr && sh.sh_type != SHT_NOBITS && sh.sh_size > 0;
}

}  // namespace

void ElfCfi::OpenDebugFrame() {
  debug_tried_ = true;
  // .debug_frame in the file itself.
  const bool has_debug_frame = HasSectionData(elf_, ".debug_frame");
  std::string debuglink;
  GElf_Shdr link_shdr;
  if (Elf_Scn* scn = FindSection(elf_, ".gnu_debuglink", &link_shdr); scn != nullptr) {
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d != nullptr && d->d_size > 4) {
      debuglink.assign(static_cast<const char*>(d->d_buf),
                       strnlen(static_cast<const char*>(d->d_buf), d->d_size));
    }
  }
  if (has_debug_frame) {
    debug_dwarf_ = dwarf_begin_elf(elf_, DWARF_C_READ, nullptr);
    if (debug_dwarf_ != nullptr) debug_cfi_ = dwarf_getcfi(debug_dwarf_);
    if (debug_cfi_ != nullptr) return;
  }
  // A separate debug file: by build-id, then by .gnu_debuglink next to the module.
  std::vector<std::string> candidates;
  if (build_id_.size() > 2) {
    candidates.push_back(absl::StrCat("/usr/lib/debug/.build-id/", build_id_.substr(0, 2), "/",
                                      build_id_.substr(2), ".debug"));
  }
  if (!debuglink.empty() && path_.find('/') != std::string::npos) {
    const std::string dir = path_.substr(0, path_.rfind('/'));
    candidates.push_back(absl::StrCat(dir, "/", debuglink));
    candidates.push_back(absl::StrCat(dir, "/.debug/", debuglink));
    candidates.push_back(absl::StrCat("/usr/lib/debug", dir, "/", debuglink));
  }
  for (const std::string& c : candidates) {
    if (c == path_) continue;
    ScopedFd fd(open(c.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) continue;
    Elf* e = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
    if (e == nullptr) continue;
    // dwarf_begin_elf inflates every compressed .debug_* section (libc6-dbg's: ~37 ms); most
    // debug files have no .debug_frame at all (their CFI is the binary's .eh_frame), so look first.
    if (!HasSectionData(e, ".debug_frame")) {
      elf_end(e);
      continue;
    }
    Dwarf* dw = dwarf_begin_elf(e, DWARF_C_READ, nullptr);
    Dwarf_CFI* cfi = dw != nullptr ? dwarf_getcfi(dw) : nullptr;
    if (cfi == nullptr) {
      if (dw != nullptr) dwarf_end(dw);
      elf_end(e);
      continue;
    }
    debug_fd_ = std::move(fd);
    debug_elf_ = e;
    debug_dwarf_ = dw;
    debug_cfi_ = cfi;
    return;
  }
}

bool ElfCfi::Compile(Dwarf_CFI* cfi, uint64_t vaddr, CfiRule* rule, uint64_t* start_out,
                     uint64_t* end_out) {
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(cfi, vaddr, &frame) != 0 || frame == nullptr) return false;
  bool signal = false;
  Dwarf_Addr start, end;
  const int ra = dwarf_frame_info(frame, &start, &end, &signal);
  *start_out = start;
  *end_out = end;
  *rule = CfiRule();
  rule->signal_frame = signal;
  bool fast = true;

  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0) {
    free(frame);
    return false;
  }
  CfaRule& c = rule->cfa;
  if (nops == 1 && ops[0].atom == DW_OP_bregx && ops[0].number < kDwarfRegCount) {
    c.kind = CfaKind::kRegOffset;
    c.reg = static_cast<uint8_t>(ops[0].number);
    c.offset = static_cast<int64_t>(ops[0].number2);
  } else if (nops == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom < DW_OP_breg0 + kDwarfRegCount) {
    c.kind = CfaKind::kRegOffset;
    c.reg = static_cast<uint8_t>(ops[0].atom - DW_OP_breg0);
    c.offset = static_cast<int64_t>(ops[0].number);
  } else {
    c.kind = CfaKind::kExpr;
    c.expr_begin = CopyOps(ops, nops, &ops_);
    c.expr_len = static_cast<uint32_t>(nops);
    fast = false;
  }

  for (int r = 0; r < kDwarfRegCount; ++r) {
    // The return address column may be numbered differently in exotic CFI; map it to ours.
    const int regno = r == kDwarfRa && ra >= 0 ? ra : r;
    Dwarf_Op ops_mem[3];
    ops = nullptr;
    nops = 0;
    RegRule& rr = rule->regs[r];
    if (dwarf_frame_register(frame, regno, ops_mem, &ops, &nops) != 0) {
      rr.kind = RegKind::kUndefined;
      continue;
    }
    if (nops == 0) {
      rr.kind = ops == nullptr ? RegKind::kSame : RegKind::kUndefined;
      continue;
    }
    const bool value = ops[nops - 1].atom == DW_OP_stack_value;
    const size_t n = value ? nops - 1 : nops;
    if (ops[0].atom == DW_OP_call_frame_cfa && n <= 2) {
      int64_t off = 0;
      bool ok = true;
      if (n == 2) {
        ok = ops[1].atom == DW_OP_plus_uconst;
        off = static_cast<int64_t>(ops[1].number);
      }
      if (ok && FitsInt32(off)) {
        rr.kind = value ? RegKind::kValOffset : RegKind::kOffset;
        rr.offset = static_cast<int32_t>(off);
        continue;
      }
    }
    if (nops == 1 && ops[0].atom == DW_OP_regx && ops[0].number < kDwarfRegCount) {
      rr.kind = RegKind::kRegister;
      rr.reg = static_cast<uint8_t>(ops[0].number);
      continue;
    }
    rr.kind = value ? RegKind::kValExpr : RegKind::kExpr;
    rr.expr_begin = CopyOps(ops, nops, &ops_);
    rr.expr_len = static_cast<uint32_t>(nops);
    fast = false;
  }
  rule->fast = fast;
  PrepareFastPath(rule);
  free(frame);
  return true;
}

const CfiRule* ElfCfi::FindSlow(uint64_t file_offset) {
  RecentSlot& slot = recent_[RecentSlotOf(file_offset)];
  auto it = by_offset_.find(file_offset);
  if (it != by_offset_.end()) {
    ++stats_.hits;
    slot = {file_offset, it->second};
    return it->second < 0 ? nullptr : &rules_[it->second];
  }
  ++stats_.misses;
  int32_t index = -1;
  uint64_t vaddr;
  if (FileOffsetToVaddr(file_offset, &vaddr)) {
    auto range = by_range_.upper_bound(vaddr);
    if (range != by_range_.begin() && vaddr < std::prev(range)->second.first) {
      index = std::prev(range)->second.second;
      ++stats_.range_hits;
    } else {
      CfiRule rule;
      uint64_t start = 0, end = 0;
      bool found = eh_cfi_ != nullptr && Compile(eh_cfi_, vaddr, &rule, &start, &end);
      if (!found) {
        if (!debug_tried_) OpenDebugFrame();
        found = debug_cfi_ != nullptr && Compile(debug_cfi_, vaddr, &rule, &start, &end);
      }
      if (found) {
        index = static_cast<int32_t>(rules_.size());
        rules_.push_back(rule);
        ++(rule.fast ? stats_.fast_rules : stats_.expr_rules);
        if (start <= vaddr && vaddr < end) by_range_[start] = {end, index};
      }
    }
  }
  if (index < 0) ++stats_.no_cfi;
  by_offset_.emplace(file_offset, index);
  slot = {file_offset, index};
  return index < 0 ? nullptr : &rules_[index];
}

}  // namespace nativeprof::unwind
