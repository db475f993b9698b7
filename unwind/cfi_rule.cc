#include "unwind/cfi_rule.h"

#include <dwarf.h>

namespace nativeprof::unwind {
namespace {

constexpr int kMaxExprStack = 16;

StepError RegValue(const DwarfRegs& regs, uint64_t reg, uint64_t* out) {
  if (reg >= kDwarfRegCount) return StepError::kUnknownReg;
  if (!regs.Has(static_cast<int>(reg))) {
    return (regs.beyond_copy >> reg) & 1 ? StepError::kBeyondStack : StepError::kUnknownReg;
  }
  *out = regs.value[reg];
  return StepError::kNone;
}

}  // namespace

StepError EvalCfiExpr(std::span<const CfiOp> ops, const DwarfRegs& regs, const StackCopy& stack,
                      uint64_t cfa, uint64_t* result, bool* is_value) {
  uint64_t st[kMaxExprStack];
  int sp = 0;
  *is_value = false;
  bool is_register_location = false;
#define NP_PUSH(v)                                         \
  do {                                                     \
    if (sp >= kMaxExprStack) return StepError::kBadExpr;   \
    const uint64_t np_v_ = (v);                            \
    st[sp++] = np_v_;                                      \
  } while (0)
#define NP_NEED(n)                                  \
  do {                                              \
    if (sp < (n)) return StepError::kBadExpr;       \
  } while (0)
  for (size_t i = 0; i < ops.size(); ++i) {
    const CfiOp& op = ops[i];
    const uint8_t a = op.atom;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
      NP_PUSH(uint64_t{a} - DW_OP_lit0);
      continue;
    }
    if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
      uint64_t v;
      if (StepError e = RegValue(regs, a - DW_OP_breg0, &v); e != StepError::kNone) return e;
      NP_PUSH(v + op.number);
      continue;
    }
    if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
      // A register location: the value lives in that register of this frame.
      uint64_t v;
      if (StepError e = RegValue(regs, a - DW_OP_reg0, &v); e != StepError::kNone) return e;
      NP_PUSH(v);
      is_register_location = true;
      continue;
    }
    switch (a) {
      case DW_OP_regx: {
        uint64_t v;
        if (StepError e = RegValue(regs, op.number, &v); e != StepError::kNone) return e;
        NP_PUSH(v);
        is_register_location = true;
        break;
      }
      case DW_OP_bregx: {
        uint64_t v;
        if (StepError e = RegValue(regs, op.number, &v); e != StepError::kNone) return e;
        NP_PUSH(v + op.number2);
        break;
      }
      case DW_OP_call_frame_cfa: NP_PUSH(cfa); break;
      case DW_OP_addr:
      case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
      case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
      case DW_OP_constu: case DW_OP_consts:
        NP_PUSH(op.number);
        break;
      case DW_OP_dup: NP_NEED(1); NP_PUSH(st[sp - 1]); break;
      case DW_OP_drop: NP_NEED(1); --sp; break;
      case DW_OP_over: NP_NEED(2); NP_PUSH(st[sp - 2]); break;
      case DW_OP_pick:
        if (op.number >= static_cast<uint64_t>(sp)) return StepError::kBadExpr;
        NP_PUSH(st[sp - 1 - op.number]);
        break;
      case DW_OP_swap: NP_NEED(2); std::swap(st[sp - 1], st[sp - 2]); break;
      case DW_OP_rot: {
        NP_NEED(3);
        const uint64_t top = st[sp - 1];
        st[sp - 1] = st[sp - 2];
        st[sp - 2] = st[sp - 3];
        st[sp - 3] = top;
        break;
      }
      case DW_OP_deref: {
        NP_NEED(1);
        uint64_t v;
        if (StepError e = stack.ReadUsed(st[sp - 1], &v); e != StepError::kNone) return e;
        st[sp - 1] = v;
        break;
      }
      case DW_OP_plus_uconst: NP_NEED(1); st[sp - 1] += op.number; break;
      case DW_OP_neg: NP_NEED(1); st[sp - 1] = -st[sp - 1]; break;
      case DW_OP_not: NP_NEED(1); st[sp - 1] = ~st[sp - 1]; break;
      case DW_OP_abs: {
        NP_NEED(1);
        const int64_t v = static_cast<int64_t>(st[sp - 1]);
        st[sp - 1] = static_cast<uint64_t>(v < 0 ? -v : v);
        break;
      }
      case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or:
      case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra: case DW_OP_div:
      case DW_OP_mod: case DW_OP_eq: case DW_OP_ne: case DW_OP_lt: case DW_OP_le:
      case DW_OP_gt: case DW_OP_ge: {
        NP_NEED(2);
        const uint64_t b = st[--sp];
        const uint64_t x = st[sp - 1];
        const int64_t sx = static_cast<int64_t>(x), sb = static_cast<int64_t>(b);
        uint64_t r = 0;
        switch (a) {
          case DW_OP_plus: r = x + b; break;
          case DW_OP_minus: r = x - b; break;
          case DW_OP_mul: r = x * b; break;
          case DW_OP_and: r = x & b; break;
          case DW_OP_or: r = x | b; break;
          case DW_OP_xor: r = x ^ b; break;
          case DW_OP_shl: r = b >= 64 ? 0 : x << b; break;
          case DW_OP_shr: r = b >= 64 ? 0 : x >> b; break;
          case DW_OP_shra: r = static_cast<uint64_t>(sx >> (b >= 64 ? 63 : b)); break;
          case DW_OP_div:
            if (b == 0) return StepError::kBadExpr;
            r = static_cast<uint64_t>(sx / sb);
            break;
          case DW_OP_mod:
            if (b == 0) return StepError::kBadExpr;
            r = x % b;
            break;
          case DW_OP_eq: r = sx == sb; break;
          case DW_OP_ne: r = sx != sb; break;
          case DW_OP_lt: r = sx < sb; break;
          case DW_OP_le: r = sx <= sb; break;
          case DW_OP_gt: r = sx > sb; break;
          case DW_OP_ge: r = sx >= sb; break;
        }
        st[sp - 1] = r;
        break;
      }
      case DW_OP_nop: break;
      case DW_OP_stack_value: *is_value = true; break;
      default:
        // Branches, TLS, typed ops: never seen in x86-64 unwind tables in practice.
        return StepError::kBadExpr;
    }
  }
#undef NP_PUSH
#undef NP_NEED
  if (sp < 1) return StepError::kBadExpr;
  if (is_register_location) *is_value = true;
  *result = st[sp - 1];
  return StepError::kNone;
}

void PrepareFastPath(CfiRule* rule) {
  CfiFastPath& f = rule->fast_path;
  f = CfiFastPath();
  if (!rule->fast || rule->cfa.kind != CfaKind::kRegOffset) return;
  for (int r = 0; r < kDwarfRegCount; ++r) {
    const RegRule& rr = rule->regs[r];
    switch (rr.kind) {
      case RegKind::kUndefined:
        break;  // absent from the caller (rsp excepted: it is the CFA)
      case RegKind::kSame:
        if (r != kDwarfRsp) f.same_mask |= 1u << r;
        break;
      case RegKind::kOffset:
      case RegKind::kValOffset:
      case RegKind::kRegister:
        f.moves[f.move_count++] = {static_cast<uint8_t>(r), rr.kind, rr.reg, rr.offset};
        break;
      case RegKind::kExpr:
      case RegKind::kValExpr:
        f = CfiFastPath();
        return;
    }
  }
  f.ready = true;
}

namespace {

// The registers an expression reads (it has no branches, so every one it names).
uint32_t ExprRegsRead(std::span<const CfiOp> ops) {
  uint32_t mask = 0;
  for (const CfiOp& op : ops) {
    uint64_t reg = kDwarfRegCount;
    if (op.atom >= DW_OP_breg0 && op.atom <= DW_OP_breg31) reg = op.atom - DW_OP_breg0;
    if (op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) reg = op.atom - DW_OP_reg0;
    if (op.atom == DW_OP_regx || op.atom == DW_OP_bregx) reg = op.number;
    if (reg < kDwarfRegCount) mask |= 1u << reg;
  }
  return mask;
}

// ApplyCfiRule for a rule with a ready fast path: the same results as the general loop below,
// register by register (kept registers in one mask operation, then the moves in register order).
StepError ApplyFastPath(const CfiRule& rule, const DwarfRegs& in_regs, const StackCopy& stack,
                        DwarfRegs* out, uint64_t* cfa_out) {
  const CfiFastPath& f = rule.fast_path;
  const uint8_t cfa_reg = rule.cfa.reg;
  if (!in_regs.Has(cfa_reg)) {
    out->depends = in_regs.depends;  // `out` may alias `in_regs`: the same value then
    return (in_regs.beyond_copy >> cfa_reg) & 1 ? StepError::kBeyondStack : StepError::kUnknownReg;
  }
  const uint64_t cfa = in_regs.value[cfa_reg] + rule.cfa.offset;
  *cfa_out = cfa;
  if (out == &in_regs) {
    // Writing `out` while reading `in` needs them apart.
    const DwarfRegs copy = in_regs;
    return ApplyFastPath(rule, copy, stack, out, cfa_out);
  }
  const DwarfRegs* in = &in_regs;
  // What the memo needs is tracked only for a walk it will store (a logged one).
  const bool track = stack.log != nullptr;
  // Kept registers: copy every value, then let the masks say which are known.
  std::memcpy(out->value, in->value, sizeof(out->value));
  out->valid = (in->valid & f.same_mask) | (1u << kDwarfRsp);
  out->beyond_copy = in->beyond_copy & f.same_mask;
  out->value[kDwarfRsp] = cfa;
  if (track) {
    std::memcpy(out->loaded_from, in->loaded_from, sizeof(out->loaded_from));
    out->sampled = in->sampled & f.same_mask;
    // The CFA's base, and this frame's sp (the epilogue test below), are used.
    out->depends = in->depends;
    NoteUse(*in, cfa_reg, stack, &out->depends);
    NoteUse(*in, kDwarfRsp, stack, &out->depends);
    out->loaded_from[kDwarfRsp] = 0;
  }
  const bool has_sp = in->Has(kDwarfRsp);
  const uint64_t sp = in->value[kDwarfRsp];
  for (uint8_t i = 0; i < f.move_count; ++i) {
    const CfiFastPath::Move& m = f.moves[i];
    const int r = m.reg;
    if (m.kind == RegKind::kOffset) {
      const uint64_t addr = cfa + static_cast<int64_t>(m.offset);
      if (r != kDwarfRa && has_sp && addr < sp) {
        // Popped by the epilogue already: the register holds the caller's value (see below).
        if (in->Has(r)) out->Carry(r, *in); else out->Clear(r);
        continue;
      }
      uint64_t v;
      if (StepError e = stack.Read(addr, &v); e != StepError::kNone) {
        if (r == kDwarfRa) return e;
        out->Clear(r);
        if (e == StepError::kBeyondStack) out->beyond_copy |= 1u << r;
        continue;
      }
      if (track) out->Load(r, v, addr - stack.base); else out->Set(r, v);
    } else if (m.kind == RegKind::kValOffset) {
      out->Set(r, cfa + static_cast<int64_t>(m.offset));
      if (track) out->ClearOrigin(r);
    } else {  // kRegister: counted as a use of the source (rare: hand-written CFI)
      if (track) {
        NoteUse(*in, m.src, stack, &out->depends);
        out->ClearOrigin(r);
      }
      if (in->Has(m.src)) out->Set(r, in->value[m.src]); else out->Clear(r);
      out->beyond_copy |= ((in->beyond_copy >> m.src) & 1u) << r;
    }
  }
  return StepError::kNone;
}

}  // namespace

StepError ApplyCfiRule(const CfiRule& rule, std::span<const CfiOp> ops, const DwarfRegs& in,
                       const StackCopy& stack, DwarfRegs* out, uint64_t* cfa_out) {
  if (rule.fast_path.ready) return ApplyFastPath(rule, in, stack, out, cfa_out);
  // What this step read, also when it fails: where it ended depends on it too. Only a walk the
  // memo will store (a logged one) needs it.
  uint32_t depends = in.depends;
  if (stack.log != nullptr) {
    uint32_t reads = 1u << kDwarfRsp;
    for (int r = 0; r < kDwarfRegCount; ++r) {
      const RegRule& rr = rule.regs[r];
      if (rr.kind == RegKind::kRegister && rr.reg < kDwarfRegCount) reads |= 1u << rr.reg;
      if (rr.kind == RegKind::kExpr || rr.kind == RegKind::kValExpr) {
        reads |= ExprRegsRead(ops.subspan(rr.expr_begin, rr.expr_len));
      }
    }
    if (rule.cfa.kind == CfaKind::kRegOffset) reads |= 1u << rule.cfa.reg;
    if (rule.cfa.kind == CfaKind::kExpr) {
      reads |= ExprRegsRead(ops.subspan(rule.cfa.expr_begin, rule.cfa.expr_len));
    }
    for (uint32_t rest = reads; rest != 0; rest &= rest - 1) {
      NoteUse(in, __builtin_ctz(rest), stack, &depends);
    }
  }
  // Where the step fails, what it used decided that: `out->depends` is set first. (`out` may
  // alias `in`, whose depends is not read after this.)
  out->depends = depends;
  uint64_t cfa = 0;
  switch (rule.cfa.kind) {
    case CfaKind::kRegOffset: {
      if (!in.Has(rule.cfa.reg)) {
        return (in.beyond_copy >> rule.cfa.reg) & 1 ? StepError::kBeyondStack
                                                    : StepError::kUnknownReg;
      }
      cfa = in.value[rule.cfa.reg] + rule.cfa.offset;
      break;
    }
    case CfaKind::kExpr: {
      bool is_value = false;
      StepError e = EvalCfiExpr(ops.subspan(rule.cfa.expr_begin, rule.cfa.expr_len), in, stack, 0,
                                &cfa, &is_value);
      if (e != StepError::kNone) return e;
      break;
    }
    case CfaKind::kUnknown:
      return StepError::kBadExpr;
  }
  *cfa_out = cfa;
  DwarfRegs next;
  next.depends = depends;
  next.Set(kDwarfRsp, cfa);  // the psABI: the caller's rsp is the CFA unless CFI says otherwise
  for (int r = 0; r < kDwarfRegCount; ++r) {
    const RegRule& rr = rule.regs[r];
    switch (rr.kind) {
      case RegKind::kUndefined:
        if (r != kDwarfRsp) next.Clear(r);
        break;
      case RegKind::kSame:
        if (r == kDwarfRsp) break;
        if (in.Has(r)) next.Carry(r, in); else next.Clear(r);
        next.beyond_copy |= in.beyond_copy & (1u << r);
        break;
      case RegKind::kOffset: {
        const uint64_t addr = cfa + static_cast<int64_t>(rr.offset);
        if (r != kDwarfRa && in.Has(kDwarfRsp) && addr < in.sp()) {
          // Below this frame's sp: the epilogue already popped the slot (GCC keeps the "saved
          // at CFA-16" rule for rbp after `leave`), so the register holds the caller's value.
          if (in.Has(r)) next.Carry(r, in); else next.Clear(r);
          break;
        }
        uint64_t v;
        if (StepError e = stack.Read(addr, &v);
            e != StepError::kNone) {
          // An unreadable callee-saved register only matters if a caller needs it; the return
          // address always does.
          if (r == kDwarfRa) return e;
          next.Clear(r);
          if (e == StepError::kBeyondStack) next.beyond_copy |= 1u << r;
          break;
        }
        next.Load(r, v, addr - stack.base);
        break;
      }
      case RegKind::kValOffset:
        next.Set(r, cfa + static_cast<int64_t>(rr.offset));
        break;
      case RegKind::kRegister:
        if (in.Has(rr.reg)) next.Set(r, in.value[rr.reg]); else next.Clear(r);
        next.beyond_copy |= ((in.beyond_copy >> rr.reg) & 1u) << r;
        break;
      case RegKind::kExpr:
      case RegKind::kValExpr: {
        uint64_t v = 0;
        bool is_value = false;
        StepError e = EvalCfiExpr(ops.subspan(rr.expr_begin, rr.expr_len), in, stack, cfa, &v,
                                  &is_value);
        const bool load = e == StepError::kNone && !is_value && rr.kind == RegKind::kExpr;
        const uint64_t addr = v;
        if (load) e = stack.Read(addr, &v);
        if (e != StepError::kNone) {
          if (r == kDwarfRa) return e;
          next.Clear(r);
          if (e == StepError::kBeyondStack) next.beyond_copy |= 1u << r;
          break;
        }
        if (load) next.Load(r, v, addr - stack.base); else next.Set(r, v);
        break;
      }
    }
  }
  *out = next;
  return StepError::kNone;
}

}  // namespace nativeprof::unwind
