// A compact, cacheable form of the CFI row for one PC: how to compute the CFA and the caller's
// registers. Simple shapes (CFA = reg + N; register saved at CFA + N; same value; undefined) are
// stored inline and evaluated without libdw (the fast path); anything else keeps a copy of the
// DWARF expression that libdw decoded, evaluated by EvalCfiExpr. Also owns the view of the copied
// user stack the evaluation reads. Used on the drain thread; no allocation while evaluating.
#ifndef NATIVEPROF_UNWIND_CFI_RULE_H_
#define NATIVEPROF_UNWIND_CFI_RULE_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "unwind/x86_64_regs.h"

namespace nativeprof::unwind {

// One DWARF operation, as libdw's Dwarf_Op (atom + two operands), copied so cache entries outlive
// the Dwarf_Frame they came from.
struct CfiOp {
  uint8_t atom = 0;
  uint64_t number = 0;
  uint64_t number2 = 0;
};

enum class CfaKind : uint8_t { kUnknown, kRegOffset, kExpr };
enum class RegKind : uint8_t {
  kUndefined,  // call-clobbered: unknown in the caller
  kSame,       // unchanged in the caller
  kOffset,     // saved in memory at CFA + offset
  kValOffset,  // the caller's value is CFA + offset
  kRegister,   // the caller's value is in register `reg` of this frame
  kExpr,       // expression yields the address where it is saved
  kValExpr,    // expression yields the value
};

struct CfaRule {
  CfaKind kind = CfaKind::kUnknown;
  uint8_t reg = 0;
  int64_t offset = 0;
  uint32_t expr_begin = 0;  // into CfiRuleSet::ops when kExpr
  uint32_t expr_len = 0;
};

struct RegRule {
  RegKind kind = RegKind::kUndefined;
  uint8_t reg = 0;
  int32_t offset = 0;
  uint32_t expr_begin = 0;
  uint32_t expr_len = 0;
};

// A fast rule (CFA = reg + N, no expression) summarised for ApplyCfiRule's per-frame loop: the
// registers the caller keeps as a mask, and only the few registers that change as a list, so a
// step does not walk (and mispredict over) all 17 register rules. Filled by PrepareFastPath.
struct CfiFastPath {
  struct Move {
    uint8_t reg = 0;
    RegKind kind = RegKind::kUndefined;  // kOffset, kValOffset or kRegister
    uint8_t src = 0;                     // kRegister: the register holding the value
    int32_t offset = 0;                  // kOffset / kValOffset: from the CFA
  };
  bool ready = false;
  uint8_t move_count = 0;
  uint32_t same_mask = 0;  // kSame registers other than rsp: copied from this frame
  Move moves[kDwarfRegCount];
};

struct CfiRule {
  // What a fast step reads comes first, so it touches few cache lines.
  CfaRule cfa;
  bool signal_frame = false;  // the caller's PC is exact (interrupted), not a return address
  bool fast = true;           // no expression anywhere: evaluated without the op interpreter
  CfiFastPath fast_path;      // used by ApplyCfiRule when fast_path.ready
  RegRule regs[kDwarfRegCount];
};

// Fills rule->fast_path from rule->cfa and rule->regs when the rule has no expression (leaves it
// not ready otherwise). Call again after changing the rule; a rule with a stale summary evaluates
// wrongly.
void PrepareFastPath(CfiRule* rule);

// Why a step failed while evaluating a rule.
// kBeyondStack: a read at or past the end of the copy (the copy was too short: truncation).
// kBadAddress: a read below the sampled sp or otherwise impossible.
enum class StepError : uint8_t { kNone, kBeyondStack, kBadAddress, kUnknownReg, kBadExpr };

// Where in the copy an unwind read the words it used (offsets from the base), for UnwindMemo,
// which replays an unwind only while those words are unchanged. Reads that failed need no entry:
// they depend on the copy's size and on addresses computed from registers and earlier reads.
struct StackReadLog {
  static constexpr uint32_t kMaxReads = 512;
  uint32_t offsets[kMaxReads];
  uint32_t count = 0;
  bool overflow = false;  // more reads than fit: the unwind cannot be memoized

  void Reset() {
    count = 0;
    overflow = false;
  }
  void Add(uint64_t offset) {
    if (count < kMaxReads) {
      offsets[count++] = static_cast<uint32_t>(offset);
    } else {
      overflow = true;
    }
  }
};

// The copied user stack: `bytes` start at address `base` (the sampled sp). With a `log`, the
// words the unwind uses are noted in it: at once by ReadUsed, and for a word loaded into a
// register (DwarfRegs::Load) when that register is used (NoteUse).
struct StackCopy {
  uint64_t base = 0;
  std::span<const uint8_t> bytes;
  StackReadLog* log = nullptr;

  uint64_t end() const { return base + bytes.size(); }
  StepError Read(uint64_t addr, uint64_t* out) const {
    if (addr < base) return StepError::kBadAddress;
    if (bytes.size() < 8 || addr - base > bytes.size() - 8) return StepError::kBeyondStack;
    std::memcpy(out, bytes.data() + (addr - base), 8);
    return StepError::kNone;
  }
  StepError ReadUsed(uint64_t addr, uint64_t* out) const {
    const StepError e = Read(addr, out);
    if (e == StepError::kNone && log != nullptr) log->Add(addr - base);
    return e;
  }
};

// Notes that the unwind used `regs`' value of `reg`: the sampled register it still is goes into
// `*depends`, the stack word it was loaded from into the copy's log. Only for a logged walk (one
// the memo will store): otherwise neither is kept.
inline void NoteUse(const DwarfRegs& regs, int reg, const StackCopy& stack, uint32_t* depends) {
  if (stack.log == nullptr) return;
  *depends |= regs.sampled & (1u << reg);
  if (regs.loaded_from[reg] != 0) stack.log->Add(regs.loaded_from[reg] - 1);
}

// Evaluates `rule` for the frame with registers `in`, writing the caller's registers (the new PC
// in kDwarfRa, the new SP = CFA in kDwarfRsp) to `out` and the CFA to `*cfa`. `out` may alias
// `in`. Values of registers `out` does not have (Has() false) are unspecified. `out->depends` is
// set also when the step fails (but not when the CFA's register is unknown); the rest of `*out` is
// unspecified too.
StepError ApplyCfiRule(const CfiRule& rule, std::span<const CfiOp> ops, const DwarfRegs& in,
                       const StackCopy& stack, DwarfRegs* out, uint64_t* cfa);

// Evaluates a DWARF expression over registers and stack. `cfa` is pushed for
// DW_OP_call_frame_cfa. Sets *is_value when the expression ended in DW_OP_stack_value.
StepError EvalCfiExpr(std::span<const CfiOp> ops, const DwarfRegs& regs, const StackCopy& stack,
                      uint64_t cfa, uint64_t* result, bool* is_value);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_CFI_RULE_H_
