// x86-64 user registers as perf delivers them (PERF_SAMPLE_REGS_USER) and as DWARF CFI numbers
// them. Owns the sample_regs_user mask that `record --call-graph dwarf` requests and the
// translation of a sample's register values into the DWARF-numbered set the unwinders use.
// Pure functions; any thread.
#ifndef NATIVEPROF_UNWIND_X86_64_REGS_H_
#define NATIVEPROF_UNWIND_X86_64_REGS_H_

#include <cstdint>
#include <span>

namespace nativeprof::unwind {

// DWARF register numbers of the x86-64 psABI. kDwarfRa is the return-address column.
enum DwarfReg : uint8_t {
  kDwarfRax = 0, kDwarfRdx = 1, kDwarfRcx = 2, kDwarfRbx = 3, kDwarfRsi = 4, kDwarfRdi = 5,
  kDwarfRbp = 6, kDwarfRsp = 7, kDwarfR8 = 8, kDwarfR9 = 9, kDwarfR10 = 10, kDwarfR11 = 11,
  kDwarfR12 = 12, kDwarfR13 = 13, kDwarfR14 = 14, kDwarfR15 = 15, kDwarfRa = 16,
};
// Registers 0..16 (the 16 general-purpose ones and the return address / rip).
inline constexpr int kDwarfRegCount = 17;

// The registers of one frame during an unwind: value per DWARF number plus a validity bit.
struct DwarfRegs {
  uint64_t value[kDwarfRegCount] = {};
  uint32_t valid = 0;  // bit n set: value[n] is known
  // bit n set: value[n] is unknown because it was saved beyond the end of the stack copy, so a
  // later need for it means "truncated", not "bad frame".
  uint32_t beyond_copy = 0;
  // For UnwindMemo, which must know what an unwind depended on, as opposed to values it only
  // carried from frame to frame (a caller's loop counter saved on the stack). bit n of
  // `sampled`: value[n] is still register n as sampled. `depends`: the sampled registers whose
  // values the unwind up to this frame used (as a CFA base, in an expression, as a frame
  // pointer). loaded_from[n]: 1 + the offset in the stack copy value[n] was loaded from (0: not
  // loaded; a copy holds at most 65,528 bytes); a use of it logs that offset (NoteUse). Kept only
  // while a walk is logged for the memo (StackCopy::log); unspecified otherwise.
  uint32_t sampled = 0;
  uint32_t depends = 0;
  uint16_t loaded_from[kDwarfRegCount] = {};

  bool Has(int reg) const { return (valid >> reg) & 1u; }
  // Leaves `sampled` and `loaded_from` as they were (a walk's hot path): a value computed into a
  // register of a set that was copied from another frame's needs ClearOrigin as well.
  void Set(int reg, uint64_t v) {
    value[reg] = v;
    valid |= 1u << reg;
  }
  void ClearOrigin(int reg) {
    sampled &= ~(1u << reg);
    loaded_from[reg] = 0;
  }
  // value[reg] = v, read from the stack copy at `offset`.
  void Load(int reg, uint64_t v, uint64_t offset) {
    Set(reg, v);
    sampled &= ~(1u << reg);
    loaded_from[reg] = static_cast<uint16_t>(offset + 1);
  }
  // Register `reg` of `from` (another frame's) carried over unchanged.
  void Carry(int reg, const DwarfRegs& from) {
    value[reg] = from.value[reg];
    valid |= 1u << reg;
    sampled = (sampled & ~(1u << reg)) | (from.sampled & (1u << reg));
    loaded_from[reg] = from.loaded_from[reg];
  }
  void Clear(int reg) { valid &= ~(1u << reg); }
  uint64_t pc() const { return value[kDwarfRa]; }
  uint64_t sp() const { return value[kDwarfRsp]; }
};

// sample_regs_user for DWARF unwinding: AX BX CX DX SI DI BP SP IP R8-R15 (perf's set minus
// FLAGS and the segment registers, which CFI never refers to). 17 registers, 136 bytes a sample.
uint64_t DwarfSampleRegsMask();

// Fills `out` from a sample's regs_user values, which hold one value per bit set in `mask`, low
// bit first. The DWARF return-address column receives IP. Registers absent from `mask` stay
// invalid. Returns false when `values` has fewer entries than `mask` has bits set.
bool RegsFromSample(std::span<const uint64_t> values, uint64_t mask, DwarfRegs* out);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_X86_64_REGS_H_
