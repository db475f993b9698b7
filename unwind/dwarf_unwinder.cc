#include "unwind/dwarf_unwinder.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <utility>

#include "module/module_path.h"
#include "unwind/cfi_rule.h"
#include "unwind/kernel_callchain.h"

namespace nativeprof::unwind {
namespace {

StackEnd EndFor(StepError e) {
  switch (e) {
    case StepError::kBeyondStack: return StackEnd::kTruncatedStack;
    case StepError::kNone: return StackEnd::kComplete;
    default: return StackEnd::kBadFrame;
  }
}

// One step with frame pointers: the caller's rbp at [rbp], its return address at [rbp + 8], its
// rsp at rbp + 16. Only for frames whose module has no CFI.
StepError FramePointerStep(const DwarfRegs& in, const StackCopy& stack, DwarfRegs* out) {
  if (!in.Has(kDwarfRbp)) {
    return (in.beyond_copy >> kDwarfRbp) & 1 ? StepError::kBeyondStack : StepError::kUnknownReg;
  }
  const uint64_t rbp = in.value[kDwarfRbp];
  if (rbp < in.sp() || (rbp & 7) != 0) return StepError::kBadAddress;
  uint64_t saved_rbp, ra;
  if (StepError e = stack.Read(rbp + 8, &ra); e != StepError::kNone) return e;
  if (StepError e = stack.Read(rbp, &saved_rbp); e != StepError::kNone) return e;
  *out = DwarfRegs();
  out->Set(kDwarfRbp, saved_rbp);
  out->Set(kDwarfRsp, rbp + 16);
  out->Set(kDwarfRa, ra);
  return StepError::kNone;
}

}  // namespace

void DwarfUnwinder::Unwind(const sampler::SampleView& sample, const ProcessView& process,
                           UnwoundStack* out) {
  out->Clear();
  const KernelCallchain chain = SplitCallchain(sample.callchain);
  AppendCallchainFrames(chain.kernel, /*kernel=*/true, out);
  const size_t first_user = out->frames.size();
  if (sample.regs_abi == PERF_SAMPLE_REGS_ABI_64 && !sample.regs_user.empty()) {
    UnwindUser(sample, process, out);
    if (options_.splice_kernel_chain) {
      SpliceKernelChain(chain.user, first_user, process, out, chain.CutAtMaxStack());
    }
  } else if (first_user == 0) {
    // No user registers (a 32-bit task, or recorded without REGS_USER) and no kernel frames.
    out->end = StackEnd::kNoUnwindInfo;
  }
}

void DwarfUnwinder::UnwindUser(const sampler::SampleView& sample, const ProcessView& process,
                               UnwoundStack* out) {
  // Two register sets used in turn (this frame, its caller), so a step copies no registers.
  DwarfRegs sets[2];
  DwarfRegs* cur = &sets[0];
  DwarfRegs* next_regs = &sets[1];
  if (!RegsFromSample(sample.regs_user, options_.regs_mask, cur) || !cur->Has(kDwarfRa) ||
      !cur->Has(kDwarfRsp)) {
    out->end = StackEnd::kNoUnwindInfo;
    return;
  }
  const StackCopy stack{cur->sp(), sample.stack_user};
  out->frames.push_back({cur->pc(), FrameAddressKind::kInstructionPointer, false});
  bool exact_pc = true;  // the leaf, and a frame interrupted by a signal, hold an exact PC
  while (true) {
    if (out->frames.size() >= kMaxFrames) {
      out->end = StackEnd::kMaxDepth;
      return;
    }
    const DwarfRegs& regs = *cur;
    DwarfRegs& next = *next_regs;
    const uint64_t pc = regs.pc();
    const uint64_t lookup = exact_pc ? pc : pc - 1;
    const sampler::Mapping* mapping =
        process.address_space != nullptr ? process.address_space->Find(lookup) : nullptr;
    if (mapping == nullptr || mapping->module == sampler::kNoModule) {
      out->end = StackEnd::kNoModule;
      return;
    }
    ElfCfi* elf = files_.Get(*mapping, process);
    if (elf == nullptr && process.modules != nullptr &&
        module::KindOfPath(process.modules->Get(mapping->module).path) ==
            module::PathKind::kNoFile) {
      out->end = StackEnd::kNoModule;  // JIT or other anonymous code: stop cleanly
      return;
    }
    const CfiRule* rule = elf != nullptr ? elf->Find(mapping->FileOffset(lookup)) : nullptr;
    StepError err;
    bool signal_frame = false;
    if (rule != nullptr) {
      uint64_t cfa;
      err = ApplyCfiRule(*rule, elf->ops(), regs, stack, &next, &cfa);
      signal_frame = rule->signal_frame;
      // A handler "returns" to the first instruction of the signal trampoline (__restore_rt):
      // pc - 1 finds its CFI (glibc covers that byte on purpose) but lies before its symbol, so
      // the trampoline is named from its exact pc (perf shows it as [unknown]).
      if (signal_frame) out->frames.back().kind = FrameAddressKind::kInstructionPointer;
      stats_.expr_frames += !rule->fast;
    } else if (regs.Has(kDwarfRbp) && regs.value[kDwarfRbp] == 0) {
      // No CFI and rbp = 0: the psABI's mark of the outermost frame (the kernel starts a process
      // with rbp = 0 and the loader's entry code, which has no CFI, keeps it).
      out->end = StackEnd::kComplete;
      out->stack_high = regs.sp();  // every read so far was below this frame's sp
      return;
    } else if (options_.frame_pointer_fallback) {
      err = FramePointerStep(regs, stack, &next);
      ++stats_.fp_fallback_frames;
      if (err != StepError::kNone && err != StepError::kBeyondStack) {
        out->end = StackEnd::kNoUnwindInfo;
        return;
      }
    } else {
      out->end = StackEnd::kNoUnwindInfo;
      return;
    }
    if (err != StepError::kNone) {
      out->end = EndFor(err);
      return;
    }
    // An undefined return address marks the outermost frame (_start, clone's child).
    if (!next.Has(kDwarfRa) && ((next.beyond_copy >> kDwarfRa) & 1u) != 0) {
      out->end = StackEnd::kTruncatedStack;  // saved where the copy does not reach
      return;
    }
    if (!next.Has(kDwarfRa) || next.pc() == 0) {
      out->end = StackEnd::kComplete;
      // CFI saves registers below the CFA: no read of any frame reached the outermost CFA.
      if (next.Has(kDwarfRsp)) out->stack_high = std::max(next.sp(), regs.sp());
      return;
    }
    // The stack grows down, so a caller's frame lies above; a signal frame may switch stacks.
    if (!signal_frame && next.sp() <= regs.sp()) {
      out->end = StackEnd::kBadFrame;
      return;
    }
    if (signal_frame && next.sp() == regs.sp() && next.pc() == pc) {
      out->end = StackEnd::kBadFrame;
      return;
    }
    exact_pc = signal_frame;
    out->frames.push_back(
        {next.pc(),
         exact_pc ? FrameAddressKind::kInstructionPointer : FrameAddressKind::kReturnAddress,
         false});
    std::swap(cur, next_regs);
  }
}

}  // namespace nativeprof::unwind
