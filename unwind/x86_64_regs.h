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

  bool Has(int reg) const { return (valid >> reg) & 1u; }
  void Set(int reg, uint64_t v) {
    value[reg] = v;
    valid |= 1u << reg;
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
