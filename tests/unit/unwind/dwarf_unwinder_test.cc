// Unit tests of the DWARF unwinding building blocks on synthetic input: stack-size parsing, the
// register mask, the CFI rule and expression evaluator (incl. the PLT CFA expression), kernel
// frames, the hybrid splice, and the unwinder's frame-pointer fallback and JIT handling.
#include <asm/perf_regs.h>
#include <dwarf.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <bit>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"
#include "unwind/cfi_rule.h"
#include "unwind/chain_splice.h"
#include "unwind/dwarf_stack_size.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/kernel_callchain.h"
#include "unwind/x86_64_regs.h"

namespace nativeprof::unwind {
namespace {

TEST(DwarfStackSizeTest, ParsesLikePerf) {
  EXPECT_EQ(*ParseDwarfStackSize(""), 8192u);
  EXPECT_EQ(*ParseDwarfStackSize("16384"), 16384u);
  EXPECT_EQ(*ParseDwarfStackSize("100"), 104u);  // rounded up to 8
  EXPECT_EQ(*ParseDwarfStackSize("65528"), 65528u);
  for (const char* bad : {"0", "1", "7", "65529", "abc", "-8", "1e3"}) {
    auto r = ParseDwarfStackSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("65528"));
  }
}

TEST(X86RegsTest, MaskHasWhatUnwindingNeeds) {
  const uint64_t mask = DwarfSampleRegsMask();
  for (int r : {PERF_REG_X86_IP, PERF_REG_X86_SP, PERF_REG_X86_BP, PERF_REG_X86_BX,
                PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15}) {
    EXPECT_TRUE((mask >> r) & 1) << r;
  }
  EXPECT_FALSE((mask >> PERF_REG_X86_FLAGS) & 1);
  EXPECT_FALSE((mask >> PERF_REG_X86_DS) & 1);
  EXPECT_EQ(std::popcount(mask), 17);
}

TEST(X86RegsTest, RegsFromSampleMapsPerfOrderToDwarf) {
  const uint64_t mask = (1u << PERF_REG_X86_BX) | (1u << PERF_REG_X86_SP) |
                        (1u << PERF_REG_X86_IP) | (1u << PERF_REG_X86_R12);
  const std::vector<uint64_t> values = {0xb, 0x5b, 0x1b, 0x12};  // low bit first: BX SP IP R12
  DwarfRegs regs;
  ASSERT_TRUE(RegsFromSample(values, mask, &regs));
  EXPECT_EQ(regs.value[kDwarfRbx], 0xbu);
  EXPECT_EQ(regs.sp(), 0x5bu);
  EXPECT_EQ(regs.pc(), 0x1bu);
  EXPECT_EQ(regs.value[kDwarfR12], 0x12u);
  EXPECT_FALSE(regs.Has(kDwarfRbp));
  EXPECT_FALSE(RegsFromSample(std::vector<uint64_t>{1, 2}, mask, &regs));
}

// A stack image at `base` holding 64-bit words.
struct FakeStack {
  uint64_t base;
  std::vector<uint64_t> words;
  StackCopy Copy() const {
    return {base, {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 8}};
  }
};

TEST(CfiRuleTest, FastRuleRestoresCallerRegisters) {
  // CFA = rsp + 24; return address at CFA - 8; rbp saved at CFA - 24.
  CfiRule rule;
  rule.cfa = {CfaKind::kRegOffset, kDwarfRsp, 24};
  for (RegRule& r : rule.regs) r.kind = RegKind::kSame;
  rule.regs[kDwarfRa] = {RegKind::kOffset, 0, -8};
  rule.regs[kDwarfRbp] = {RegKind::kOffset, 0, -24};
  rule.regs[kDwarfRax].kind = RegKind::kUndefined;
  FakeStack stack{0x7000, {0xbbbb, 0x1111, 0x4242, 0x9999}};
  DwarfRegs in;
  in.Set(kDwarfRsp, 0x7000);
  in.Set(kDwarfRa, 0x400100);
  in.Set(kDwarfRbx, 0x77);
  in.Set(kDwarfRax, 0x55);
  DwarfRegs out;
  uint64_t cfa = 0;
  ASSERT_EQ(ApplyCfiRule(rule, {}, in, stack.Copy(), &out, &cfa), StepError::kNone);
  EXPECT_EQ(cfa, 0x7018u);
  EXPECT_EQ(out.sp(), 0x7018u);
  EXPECT_EQ(out.pc(), 0x4242u);
  EXPECT_EQ(out.value[kDwarfRbp], 0xbbbbu);
  EXPECT_EQ(out.value[kDwarfRbx], 0x77u);  // same value
  EXPECT_FALSE(out.Has(kDwarfRax));         // call-clobbered
}

TEST(CfiRuleTest, ReturnAddressPastTheCopyIsTruncation) {
  CfiRule rule;
  rule.cfa = {CfaKind::kRegOffset, kDwarfRsp, 64};
  rule.regs[kDwarfRa] = {RegKind::kOffset, 0, -8};
  FakeStack stack{0x7000, {1, 2, 3}};
  DwarfRegs in, out;
  in.Set(kDwarfRsp, 0x7000);
  in.Set(kDwarfRa, 0x400100);
  uint64_t cfa;
  EXPECT_EQ(ApplyCfiRule(rule, {}, in, stack.Copy(), &out, &cfa), StepError::kBeyondStack);
  rule.cfa = {CfaKind::kRegOffset, kDwarfRsp, -64};  // below the sampled sp: impossible
  EXPECT_EQ(ApplyCfiRule(rule, {}, in, stack.Copy(), &out, &cfa), StepError::kBadAddress);
  rule.cfa = {CfaKind::kRegOffset, kDwarfRbp, 16};    // rbp unknown
  EXPECT_EQ(ApplyCfiRule(rule, {}, in, stack.Copy(), &out, &cfa), StepError::kUnknownReg);
}

TEST(CfiRuleTest, SlotBelowSpAfterEpilogueKeepsTheRegister) {
  // At `ret` after `leave`, GCC's CFI says CFA = rsp + 8 but still "rbp saved at CFA - 16",
  // which is below rsp (popped): rbp already holds the caller's value.
  CfiRule rule;
  rule.cfa = {CfaKind::kRegOffset, kDwarfRsp, 8};
  rule.regs[kDwarfRa] = {RegKind::kOffset, 0, -8};
  rule.regs[kDwarfRbp] = {RegKind::kOffset, 0, -16};
  FakeStack stack{0x7000, {0x401234, 0}};
  DwarfRegs in, out;
  in.Set(kDwarfRsp, 0x7000);
  in.Set(kDwarfRa, 0x401468);
  in.Set(kDwarfRbp, 0x7100);
  uint64_t cfa;
  ASSERT_EQ(ApplyCfiRule(rule, {}, in, stack.Copy(), &out, &cfa), StepError::kNone);
  EXPECT_EQ(out.pc(), 0x401234u);
  ASSERT_TRUE(out.Has(kDwarfRbp));
  EXPECT_EQ(out.value[kDwarfRbp], 0x7100u);
}

TEST(CfiRuleTest, RegisterSavedPastTheCopyMakesLaterUseATruncation) {
  // rbp saved beyond the copy: the step succeeds, but a caller whose CFA needs rbp is truncated.
  CfiRule rule;
  rule.cfa = {CfaKind::kRegOffset, kDwarfRsp, 16};
  rule.regs[kDwarfRa] = {RegKind::kOffset, 0, -8};
  rule.regs[kDwarfRbp] = {RegKind::kOffset, 0, 64};
  FakeStack stack{0x7000, {0, 0x401234}};
  DwarfRegs in, out, out2;
  in.Set(kDwarfRsp, 0x7000);
  in.Set(kDwarfRa, 0x401000);
  uint64_t cfa;
  ASSERT_EQ(ApplyCfiRule(rule, {}, in, stack.Copy(), &out, &cfa), StepError::kNone);
  EXPECT_FALSE(out.Has(kDwarfRbp));
  CfiRule caller;
  caller.cfa = {CfaKind::kRegOffset, kDwarfRbp, 16};
  EXPECT_EQ(ApplyCfiRule(caller, {}, out, stack.Copy(), &out2, &cfa), StepError::kBeyondStack);
}

// The CFA expression binutils emits for PLT entries: rsp + 8, plus 8 more once the entry has
// pushed its argument (rip & 15 >= 11).
std::vector<CfiOp> PltCfaExpr() {
  return {{DW_OP_breg7, 8, 0}, {DW_OP_breg16, 0, 0}, {DW_OP_lit15, 0, 0}, {DW_OP_and, 0, 0},
          {DW_OP_lit11, 0, 0}, {DW_OP_ge, 0, 0},     {DW_OP_lit3, 0, 0},  {DW_OP_shl, 0, 0},
          {DW_OP_plus, 0, 0}};
}

TEST(CfiExprTest, EvaluatesThePltCfaExpression) {
  const std::vector<CfiOp> ops = PltCfaExpr();
  DwarfRegs regs;
  regs.Set(kDwarfRsp, 0x1000);
  StackCopy none;
  uint64_t v;
  bool is_value;
  regs.Set(kDwarfRa, 0x401025);  // & 15 == 5
  ASSERT_EQ(EvalCfiExpr(ops, regs, none, 0, &v, &is_value), StepError::kNone);
  EXPECT_EQ(v, 0x1008u);
  regs.Set(kDwarfRa, 0x40102c);  // & 15 == 12
  ASSERT_EQ(EvalCfiExpr(ops, regs, none, 0, &v, &is_value), StepError::kNone);
  EXPECT_EQ(v, 0x1010u);
}

TEST(CfiExprTest, DerefsStackAndRejectsUnknownOps) {
  // What __restore_rt's CFI does: CFA = *(rsp + 160).
  FakeStack stack{0x2000, std::vector<uint64_t>(32, 0)};
  stack.words[20] = 0xfeed;
  DwarfRegs regs;
  regs.Set(kDwarfRsp, 0x2000);
  const std::vector<CfiOp> ops = {{DW_OP_breg7, 160, 0}, {DW_OP_deref, 0, 0}};
  uint64_t v;
  bool is_value;
  ASSERT_EQ(EvalCfiExpr(ops, regs, stack.Copy(), 0, &v, &is_value), StepError::kNone);
  EXPECT_EQ(v, 0xfeedu);
  const std::vector<CfiOp> bad = {{DW_OP_call_frame_cfa, 0, 0}, {DW_OP_form_tls_address, 0, 0}};
  EXPECT_EQ(EvalCfiExpr(bad, regs, stack.Copy(), 1, &v, &is_value), StepError::kBadExpr);
  const std::vector<CfiOp> underflow = {{DW_OP_plus, 0, 0}};
  EXPECT_EQ(EvalCfiExpr(underflow, regs, stack.Copy(), 1, &v, &is_value), StepError::kBadExpr);
  const std::vector<CfiOp> value = {{DW_OP_call_frame_cfa, 0, 0}, {DW_OP_stack_value, 0, 0}};
  ASSERT_EQ(EvalCfiExpr(value, regs, stack.Copy(), 0x3000, &v, &is_value), StepError::kNone);
  EXPECT_EQ(v, 0x3000u);
  EXPECT_TRUE(is_value);
}

TEST(ChainSpliceTest, KernelFramesComeFirst) {
  const uint64_t kernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
  const uint64_t user = static_cast<uint64_t>(PERF_CONTEXT_USER);
  const std::vector<uint64_t> chain = {kernel, 0xffffffff81000010, 0xffffffff81000020, user,
                                       0x401000, 0x401100};
  UnwoundStack out;
  const KernelCallchain split = SplitCallchain(chain);
  AppendCallchainFrames(split.kernel, /*kernel=*/true, &out);
  std::span<const uint64_t> rest = split.user;
  ASSERT_EQ(out.frames.size(), 2u);
  EXPECT_TRUE(out.frames[0].kernel);
  EXPECT_EQ(out.frames[0].kind, FrameAddressKind::kInstructionPointer);
  EXPECT_EQ(out.frames[1].kind, FrameAddressKind::kReturnAddress);
  EXPECT_THAT(std::vector<uint64_t>(rest.begin(), rest.end()),
              ::testing::ElementsAre(0x401000, 0x401100));
}

class SpliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sampler::ModuleInfo info;
    info.path = "/bin/prog";
    id_ = modules_.Intern(info);
    as_.Map({0x400000, 0x410000, 0, PROT_READ | PROT_EXEC, id_});
    as_.Map({0x600000, 0x610000, 0, PROT_READ | PROT_WRITE, id_});
  }
  ProcessView View() const { return {0, &as_, &modules_}; }
  sampler::AddressSpace as_;
  sampler::ModuleRegistry modules_;
  sampler::ModuleId id_ = 0;
};

TEST_F(SpliceTest, ContinuesATruncatedUnwindWithTheKernelChain) {
  UnwoundStack out;
  out.frames = {{0x401000, FrameAddressKind::kInstructionPointer}, {0x402000}, {0x403000}};
  out.end = StackEnd::kTruncatedStack;
  const std::vector<uint64_t> chain = {0x401000, 0x402000, 0x403000, 0x404000, 0x405000};
  ASSERT_TRUE(SpliceKernelChain(chain, 0, View(), &out));
  EXPECT_TRUE(out.spliced);
  EXPECT_EQ(out.end, StackEnd::kComplete);
  ASSERT_EQ(out.frames.size(), 5u);
  EXPECT_EQ(out.frames[3].avma, 0x404000u);
  EXPECT_EQ(out.frames[4].avma, 0x405000u);
}

// A recursion: every level returns to the same address. The unwind got three levels before the
// copy ended; the chain has all five and main's. The join is after the chain's third, not its
// first (which repeated the two levels the unwind already had).
TEST_F(SpliceTest, JoinsARecursionAtTheLevelTheUnwindReached) {
  UnwoundStack out;
  out.frames = {{0x401000, FrameAddressKind::kInstructionPointer}, {0x402000}, {0x403000},
                {0x403000}, {0x403000}};
  out.end = StackEnd::kTruncatedStack;
  // The chain misses 0x402000 (the leaf was sampled before it pushed rbp).
  const std::vector<uint64_t> chain = {0x401000, 0x403000, 0x403000, 0x403000,
                                       0x403000, 0x403000, 0x404000};
  ASSERT_TRUE(SpliceKernelChain(chain, 0, View(), &out));
  std::vector<uint64_t> got;
  for (const Frame& f : out.frames) got.push_back(f.avma);
  EXPECT_EQ(got, (std::vector<uint64_t>{0x401000, 0x402000, 0x403000, 0x403000, 0x403000,
                                        0x403000, 0x403000, 0x404000}));
  // A chain with fewer levels than the unwind has is not joined.
  UnwoundStack deep;
  deep.frames = out.frames;
  deep.frames.resize(5);
  deep.end = StackEnd::kTruncatedStack;
  EXPECT_FALSE(SpliceKernelChain(std::vector<uint64_t>{0x401000, 0x403000, 0x403000, 0x404000},
                                 0, View(), &deep));
  EXPECT_EQ(deep.frames.size(), 5u);
}

// The leaf is the recursive function itself, sampled outside its own frame (a shrink-wrapped
// path with no push of rbp): the kernel's chain starts at its caller's frame record and lacks
// the leaf's return address, one of the occurrences the join counts. True stack: the leaf,
// five levels returning to 0x403000, then main's caller at 0x404000. The leaf's caller's CFA is
// 0x7ff000 (its frame record at 0x7feff0).
TEST_F(SpliceTest, AChainThatLacksTheLeafsReturnAddressJoinsOneOccurrenceEarlier) {
  const auto splice = [&](uint64_t sampled_rbp, size_t unwound_levels,
                          std::vector<uint64_t> chain) {
    UnwoundStack out;
    out.frames = {{0x401000, FrameAddressKind::kInstructionPointer}};
    for (size_t i = 0; i < unwound_levels; ++i) out.frames.push_back({0x403000});
    out.end = StackEnd::kTruncatedStack;
    if (unwound_levels >= 2) out.caller_cfa = 0x7ff000;
    out.sampled_rbp = sampled_rbp;
    std::vector<uint64_t> got;
    if (SpliceKernelChain(chain, 0, View(), &out)) {
      for (const Frame& f : out.frames) got.push_back(f.avma);
    }
    return got;
  };
  const std::vector<uint64_t> whole = {0x401000, 0x403000, 0x403000, 0x403000,
                                       0x403000, 0x403000, 0x404000};
  // rbp is the caller's record: the chain has four levels, not five.
  const std::vector<uint64_t> lacking = {0x401000, 0x403000, 0x403000, 0x403000, 0x403000,
                                         0x404000};
  EXPECT_EQ(splice(0x7feff0, 3, lacking), whole);
  // rbp is the leaf's own record (below the caller's CFA by more): the chain has all five.
  EXPECT_EQ(splice(0x7fef00, 3, {0x401000, 0x403000, 0x403000, 0x403000, 0x403000, 0x403000,
                                 0x404000}),
            whole);
  // rbp further up than the caller's record (the caller is frameless too, or rbp holds no frame
  // pointer): how much the chain lacks is not known, and the join stays as it was.
  EXPECT_EQ(splice(0x7ff100, 3, lacking).size(), whole.size() - 1);
  // Only the leaf's return address unwound: no caller's CFA to tell by, so the join stays as it
  // was (a level short here).
  EXPECT_EQ(splice(0x7feff0, 1, lacking).size(), whole.size() - 1);
}

// A walk that got only the leaf has no return address to find in the chain: not joined.
TEST_F(SpliceTest, ALeafAloneIsNotJoined) {
  UnwoundStack out;
  out.frames = {{0x401000, FrameAddressKind::kInstructionPointer}};
  out.end = StackEnd::kTruncatedStack;
  EXPECT_FALSE(SpliceKernelChain(std::vector<uint64_t>{0x401000, 0x402000, 0x404000}, 0, View(),
                                 &out));
  EXPECT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.end, StackEnd::kTruncatedStack);
}

TEST_F(SpliceTest, RefusesAnInconsistentChain) {
  UnwoundStack out;
  out.frames = {{0x401000, FrameAddressKind::kInstructionPointer}, {0x402000}};
  out.end = StackEnd::kTruncatedStack;
  // 0x600100 is in a non-executable mapping: frame pointers led into data.
  std::vector<uint64_t> chain = {0x401000, 0x402000, 0x404000, 0x600100};
  EXPECT_FALSE(SpliceKernelChain(chain, 0, View(), &out));
  // The last unwound frame is not in the chain at all.
  chain = {0x401000, 0x409000, 0x404000};
  EXPECT_FALSE(SpliceKernelChain(chain, 0, View(), &out));
  EXPECT_FALSE(out.spliced);
  EXPECT_EQ(out.frames.size(), 2u);
  // A complete unwind is never spliced.
  out.end = StackEnd::kComplete;
  chain = {0x401000, 0x402000, 0x404000};
  EXPECT_FALSE(SpliceKernelChain(chain, 0, View(), &out));
}

// Samples over modules with no file: the unwinder must use frame pointers for them and stop
// cleanly in anonymous (JIT) memory.
class UnwinderNoCfiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sampler::ModuleInfo prog;
    prog.path = "/nonexistent/prog-without-file";
    sampler::ModuleInfo jit;
    jit.path = "//anon";
    as_.Map({0x400000, 0x410000, 0, PROT_READ | PROT_EXEC, modules_.Intern(prog)});
    as_.Map({0x7f0000000000, 0x7f0000100000, 0, PROT_READ | PROT_EXEC, modules_.Intern(jit)});
  }
  sampler::SampleView Sample(uint64_t ip, uint64_t sp, uint64_t bp) {
    regs_ = std::vector<uint64_t>(17, 0);
    // DwarfSampleRegsMask order: AX BX CX DX SI DI BP SP IP R8..R15
    regs_[6] = bp;
    regs_[7] = sp;
    regs_[8] = ip;
    sampler::SampleView s;
    s.regs_abi = PERF_SAMPLE_REGS_ABI_64;
    s.regs_user = regs_;
    s.stack_user = {reinterpret_cast<const uint8_t*>(stack_.words.data()), stack_.words.size() * 8};
    return s;
  }
  ProcessView View() const { return {0, &as_, &modules_}; }
  sampler::AddressSpace as_;
  sampler::ModuleRegistry modules_;
  std::vector<uint64_t> regs_;
  FakeStack stack_{0x7ffd0000, {}};
};

TEST_F(UnwinderNoCfiTest, FallsBackToFramePointers) {
  // sp = base; frame 1 at base+16: [saved rbp = base+48][ra = 0x401200]; frame 2 at base+48:
  // [saved rbp = 0][ra = 0] ends the chain.
  stack_.words = {0, 0, 0x7ffd0030, 0x401200, 0, 0, 0, 0};
  DwarfUnwinder unwinder;
  UnwoundStack out;
  unwinder.Unwind(Sample(0x401000, 0x7ffd0000, 0x7ffd0010), View(), &out);
  ASSERT_EQ(out.frames.size(), 2u);
  EXPECT_EQ(out.frames[0].avma, 0x401000u);
  EXPECT_EQ(out.frames[1].avma, 0x401200u);
  EXPECT_EQ(out.frames[1].kind, FrameAddressKind::kReturnAddress);
  EXPECT_EQ(out.end, StackEnd::kComplete);  // the second step found return address 0: the end
  EXPECT_GE(unwinder.stats().fp_fallback_frames, 1u);
}

// The splice needs the CFA of the leaf's caller (the sp of the frame above it); a memoized
// unwind gives the same.
TEST_F(UnwinderNoCfiTest, TheCallersCfaIsKeptAndReplayed) {
  // Frame records at base+16 (-> base+48, ra 0x401200), base+48 (-> base+80, ra 0x401300) and
  // base+80 (0, ra 0: the end).
  stack_.words = {0, 0, 0x7ffd0030, 0x401200, 0, 0, 0x7ffd0050, 0x401300, 0, 0, 0, 0};
  DwarfUnwinder unwinder;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    UnwoundStack out;
    unwinder.Unwind(Sample(0x401000, 0x7ffd0000, 0x7ffd0010), View(), &out);
    ASSERT_EQ(out.frames.size(), 3u);
    EXPECT_EQ(out.caller_cfa, 0x7ffd0040u);  // the second record + 16
    EXPECT_EQ(out.sampled_rbp, 0x7ffd0010u);
    EXPECT_EQ(out.replayed_from != 0, round == 1);
  }
}

// Without CFI and frame pointers, rbp holds whatever the code put there. Far past the copy it is
// no frame: the walk ends for want of unwind information, not as a stack the copy cut short
// (which the summary blames on the copy's size). Just past the copy it may be the next frame.
TEST_F(UnwinderNoCfiTest, AnRbpFarPastTheCopyIsNoFrame) {
  stack_.words = {0, 0, 0, 0};
  DwarfUnwinder unwinder;
  UnwoundStack out;
  unwinder.Unwind(Sample(0x401000, 0x7ffd0000, 0x2bdd193364bb2588), View(), &out);
  EXPECT_EQ(out.end, StackEnd::kNoUnwindInfo);
  unwinder.Unwind(Sample(0x401000, 0x7ffd0000, 0x7ffd0000 + (uint64_t{3} << 30)), View(), &out);
  EXPECT_EQ(out.end, StackEnd::kNoUnwindInfo);
  unwinder.Unwind(Sample(0x401000, 0x7ffd0000, 0x7ffd0000 + 0x10000), View(), &out);
  EXPECT_EQ(out.end, StackEnd::kTruncatedStack);
}

TEST_F(UnwinderNoCfiTest, NoCfiAndZeroRbpIsTheOutermostFrame) {
  // The loader's entry code has no CFI and runs with rbp = 0, as the kernel started the process.
  stack_.words = {0x401200, 0, 0, 0};
  DwarfUnwinder unwinder;
  UnwoundStack out;
  unwinder.Unwind(Sample(0x401000, 0x7ffd0000, 0), View(), &out);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.end, StackEnd::kComplete);
}

TEST_F(UnwinderNoCfiTest, StopsCleanlyInJitCode) {
  stack_.words = {0, 0, 0, 0};
  DwarfUnwinder unwinder;
  UnwoundStack out;
  unwinder.Unwind(Sample(0x7f0000000100, 0x7ffd0000, 0), View(), &out);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.end, StackEnd::kNoModule);
  unwinder.Unwind(Sample(0x12345, 0x7ffd0000, 0), View(), &out);  // in no mapping at all
  EXPECT_EQ(out.end, StackEnd::kNoModule);
  EXPECT_EQ(unwinder.stats().fp_fallback_frames, 0u) << "no frame pointer walk out of JIT code";
}

TEST_F(UnwinderNoCfiTest, NoUserRegistersGivesKernelFramesOnly) {
  const std::vector<uint64_t> chain = {static_cast<uint64_t>(PERF_CONTEXT_KERNEL), 0xffffffff81000010};
  sampler::SampleView s;
  s.callchain = chain;
  DwarfUnwinder unwinder;
  UnwoundStack out;
  unwinder.Unwind(s, View(), &out);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_TRUE(out.frames[0].kernel);
  EXPECT_EQ(out.end, StackEnd::kComplete);
}

}  // namespace
}  // namespace nativeprof::unwind
