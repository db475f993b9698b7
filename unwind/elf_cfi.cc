#include "unwind/elf_cfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "base/logging.h"

namespace nativeprof::unwind {
namespace {

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
}

absl::StatusOr<std::unique_ptr<ElfCfi>> ElfCfi::FromImage(std::unique_ptr<module::ElfImage> image,
                                                          std::vector<std::string> debug_dirs) {
  std::unique_ptr<ElfCfi> m(new ElfCfi());
  m->image_ = std::move(image);
  m->debug_dirs_ = std::move(debug_dirs);
  m->eh_cfi_ = dwarf_getcfi_elf(m->image_->elf());  // null when the module has no .eh_frame
  return m;
}

void ElfCfi::OpenDebugFrame() {
  debug_tried_ = true;
  // .debug_frame in the file itself.
  if (image_->HasSectionData(".debug_frame")) {
    debug_dwarf_ = dwarf_begin_elf(image_->elf(), DWARF_C_READ, nullptr);
    if (debug_dwarf_ != nullptr) debug_cfi_ = dwarf_getcfi(debug_dwarf_);
    if (debug_cfi_ != nullptr) return;
    if (debug_dwarf_ != nullptr) dwarf_end(debug_dwarf_);
    debug_dwarf_ = nullptr;
  }
  // A separate debug file, found as the symbolizer finds it (build-id, then a CRC-checked
  // .gnu_debuglink); the image is named by the module's path on disk, where debuglink looks.
  absl::StatusOr<module::DebugFileResult> debug =
      module::FindDebugFile(*image_, image_->name(), debug_dirs_);
  if (!debug.ok()) {
    SPDLOG_LOGGER_DEBUG(Logger("unwind"), "{}", debug.status().message());
    return;
  }
  // dwarf_begin_elf inflates every compressed .debug_* section (libc6-dbg's: ~37 ms); most
  // debug files have no .debug_frame at all (their CFI is the binary's .eh_frame), so look first.
  if (!debug->file->HasSectionData(".debug_frame")) return;
  Dwarf* dw = dwarf_begin_elf(debug->file->elf(), DWARF_C_READ, nullptr);
  Dwarf_CFI* cfi = dw != nullptr ? dwarf_getcfi(dw) : nullptr;
  if (cfi == nullptr) {
    if (dw != nullptr) dwarf_end(dw);
    return;
  }
  debug_image_ = std::move(debug->file);
  debug_dwarf_ = dw;
  debug_cfi_ = cfi;
}

namespace {

// Where the CFI row that holds `svma` ends (libdw's end: the next row's start).
bool RowEnd(Dwarf_CFI* cfi, uint64_t svma, uint64_t* end_out) {
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(cfi, svma, &frame) != 0 || frame == nullptr) return false;
  Dwarf_Addr start, end;
  bool signal = false;
  (void)dwarf_frame_info(frame, &start, &end, &signal);
  free(frame);
  *end_out = end;
  return true;
}

}  // namespace

bool ElfCfi::Compile(Dwarf_CFI* cfi, uint64_t svma, CfiRule* rule, uint64_t* start_out,
                     uint64_t* end_out) {
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(cfi, svma, &frame) != 0 || frame == nullptr) return false;
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
  uint64_t svma;
  if (image_->FileOffsetToSvma(file_offset, &svma)) {
    auto range = by_range_.upper_bound(svma);
    if (range != by_range_.begin() && svma < std::prev(range)->second.first) {
      index = std::prev(range)->second.second;
      ++stats_.range_hits;
    } else {
      CfiRule rule;
      uint64_t start = 0, end = 0;
      Dwarf_CFI* cfi = eh_cfi_;
      bool found = cfi != nullptr && Compile(cfi, svma, &rule, &start, &end);
      if (!found) {
        if (!debug_tried_) OpenDebugFrame();
        cfi = debug_cfi_;
        found = cfi != nullptr && Compile(cfi, svma, &rule, &start, &end);
      }
      if (found) {
        index = static_cast<int32_t>(rules_.size());
        rules_.push_back(rule);
        ++(rule.fast ? stats_.fast_rules : stats_.expr_rules);
        // libdw's end is the next row's start, but after DW_CFA_restore_state its start is that
        // of the row the state was remembered at (before a function's epilogue, whose rows lie
        // in between): [start, end) would give the epilogue the body's CFA (libc's _int_free:
        // [0x96283, 0x965a0) for the row at 0x96290, over the pops at 0x96283-0x9628d). The
        // range runs from start only if the row at start reaches svma, else from svma.
        if (start < svma) {
          uint64_t start_row_end = 0;
          if (!RowEnd(cfi, start, &start_row_end) || start_row_end <= svma) start = svma;
        }
        if (start <= svma && svma < end) by_range_[start] = {end, index};
      }
    }
  }
  if (index < 0) ++stats_.no_cfi;
  by_offset_.emplace(file_offset, index);
  slot = {file_offset, index};
  return index < 0 ? nullptr : &rules_[index];
}

}  // namespace nativeprof::unwind
