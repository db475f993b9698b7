// The fast path of ApplyCfiRule (PrepareFastPath's summary) must give exactly what the general
// per-register loop gives: checked on many random rules, registers and stacks.
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "unwind/cfi_rule.h"

namespace nativeprof::unwind {
namespace {

struct Outcome {
  StepError error = StepError::kNone;
  uint64_t cfa = 0;
  DwarfRegs regs;
};

Outcome Apply(const CfiRule& rule, const DwarfRegs& in, const StackCopy& stack) {
  Outcome o;
  o.error = ApplyCfiRule(rule, {}, in, stack, &o.regs, &o.cfa);
  return o;
}

void ExpectSame(const Outcome& general, const Outcome& fast, int iteration) {
  SCOPED_TRACE(iteration);
  ASSERT_EQ(general.error, fast.error);
  if (general.error != StepError::kNone) return;
  EXPECT_EQ(general.cfa, fast.cfa);
  EXPECT_EQ(general.regs.valid, fast.regs.valid);
  EXPECT_EQ(general.regs.beyond_copy, fast.regs.beyond_copy);
  for (int r = 0; r < kDwarfRegCount; ++r) {
    if (general.regs.Has(r)) EXPECT_EQ(general.regs.value[r], fast.regs.value[r]) << "reg " << r;
  }
}

TEST(CfiFastPathTest, MatchesTheGeneralEvaluation) {
  std::mt19937_64 rng(12345);
  auto pick = [&](uint64_t n) { return rng() % n; };
  constexpr uint64_t kBase = 0x7ffd0000;
  std::vector<uint64_t> words(64);
  int fast_ready = 0;
  for (int i = 0; i < 20000; ++i) {
    for (uint64_t& w : words) w = rng();
    // Sometimes a short copy, so reads run past its end.
    const size_t copied = 8 * (pick(4) == 0 ? pick(words.size()) : words.size());
    const StackCopy stack{kBase, {reinterpret_cast<const uint8_t*>(words.data()), copied}};

    CfiRule rule;
    rule.cfa.kind = CfaKind::kRegOffset;
    rule.cfa.reg = static_cast<uint8_t>(pick(3) == 0 ? pick(kDwarfRegCount) : kDwarfRsp);
    rule.cfa.offset = static_cast<int64_t>(pick(40)) * 8 - 64;
    for (int r = 0; r < kDwarfRegCount; ++r) {
      RegRule& rr = rule.regs[r];
      switch (pick(5)) {
        case 0: rr.kind = RegKind::kUndefined; break;
        case 1: rr.kind = RegKind::kSame; break;
        case 2: rr.kind = RegKind::kOffset; break;
        case 3: rr.kind = RegKind::kValOffset; break;
        default: rr.kind = RegKind::kRegister; break;
      }
      rr.offset = static_cast<int32_t>(pick(40)) * 8 - 200;
      rr.reg = static_cast<uint8_t>(pick(kDwarfRegCount));
    }

    DwarfRegs in;
    for (int r = 0; r < kDwarfRegCount; ++r) {
      const uint64_t what = pick(4);
      if (what == 0) continue;  // unknown
      if (what == 1) {
        in.beyond_copy |= 1u << r;
        continue;
      }
      in.Set(r, r == kDwarfRsp || r == kDwarfRbp ? kBase + pick(64) * 8 : rng());
    }
    if (pick(8) != 0) in.Set(kDwarfRsp, kBase + pick(16) * 8);

    CfiRule general = rule;  // fast_path not ready: the per-register loop
    CfiRule fast = rule;
    PrepareFastPath(&fast);
    ASSERT_TRUE(fast.fast_path.ready);
    ++fast_ready;
    ExpectSame(Apply(general, in, stack), Apply(fast, in, stack), i);
    // The caller's registers may be written over this frame's.
    Outcome aliased;
    aliased.regs = in;
    aliased.error = ApplyCfiRule(fast, {}, aliased.regs, stack, &aliased.regs, &aliased.cfa);
    ExpectSame(Apply(general, in, stack), aliased, i);
    if (HasFailure()) return;
  }
  EXPECT_EQ(fast_ready, 20000);
}

TEST(CfiFastPathTest, ExpressionRulesKeepTheGeneralPath) {
  CfiRule rule;
  rule.cfa = {CfaKind::kRegOffset, kDwarfRsp, 8};
  rule.regs[kDwarfRa] = {RegKind::kExpr, 0, 0, 0, 1};
  rule.fast = false;
  PrepareFastPath(&rule);
  EXPECT_FALSE(rule.fast_path.ready);
  CfiRule cfa_expr;
  cfa_expr.cfa.kind = CfaKind::kExpr;
  cfa_expr.fast = false;
  PrepareFastPath(&cfa_expr);
  EXPECT_FALSE(cfa_expr.fast_path.ready);
}

}  // namespace
}  // namespace nativeprof::unwind
