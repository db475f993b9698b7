#include "unwind/dwarf_unwinder.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <utility>

#include "module/module_path.h"
#include "unwind/cfi_rule.h"
#include "unwind/kernel_callchain.h"

namespace nativeprof::unwind {
namespace {

// Code with no ELF image behind it (a memfd that is not one is a JIT's).
bool IsAnonymousCode(absl::string_view path) {
  const module::PathKind kind = module::KindOfPath(path);
  return kind == module::PathKind::kNoFile || kind == module::PathKind::kMemfd;
}

// Whether the two bytes before `pc` are `syscall` (0f 05): the leaf stopped in a system call,
// not after a fault or a preemption in its own code (hand-written assembly may have pushed a
// code pointer there).
bool AfterSyscallInstruction(const ElfCfi& elf, const sampler::Mapping& mapping, uint64_t pc) {
  const std::span<const uint8_t> code = elf.image().Bytes(mapping.FileOffset(pc - 2), 2);
  return code.size() == 2 && code[0] == 0x0f && code[1] == 0x05;
}

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
  out->depends = in.depends;  // what the walk used so far, also when this step fails
  if (!in.Has(kDwarfRbp)) {
    return (in.beyond_copy >> kDwarfRbp) & 1 ? StepError::kBeyondStack : StepError::kUnknownReg;
  }
  const uint64_t rbp = in.value[kDwarfRbp];
  NoteUse(in, kDwarfRbp, stack, &out->depends);
  NoteUse(in, kDwarfRsp, stack, &out->depends);
  if (rbp < in.sp() || (rbp & 7) != 0) return StepError::kBadAddress;
  // A register that holds no frame pointer (code built without them, and without CFI) can lie
  // anywhere above sp: far past any stack it is no frame, and not a stack cut short by the copy
  // (which the run's summary would blame on the copy's size).
  constexpr uint64_t kFarPastTheCopy = uint64_t{1} << 30;
  if (rbp - stack.end() > kFarPastTheCopy && rbp > stack.end()) return StepError::kBadAddress;
  uint64_t saved_rbp, ra;
  if (StepError e = stack.Read(rbp + 8, &ra); e != StepError::kNone) return e;
  if (StepError e = stack.Read(rbp, &saved_rbp); e != StepError::kNone) return e;
  const uint32_t depends = out->depends;
  *out = DwarfRegs();
  out->depends = depends;
  out->Load(kDwarfRbp, saved_rbp, rbp - stack.base);
  out->Set(kDwarfRsp, rbp + 16);
  out->Load(kDwarfRa, ra, rbp + 8 - stack.base);
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
    // Kernel frames in front, or a switch sample (whose kernel frames a recording without them
    // leaves out): the user registers are those of a system call's entry, or of a fault's or a
    // preemption's.
    UnwindUser(sample, process,
               /*in_syscall=*/first_user != 0 ||
                   sample.event == sampler::SampleEvent::kContextSwitch,
               out);
    const size_t unwound = out->frames.size();
    if (options_.splice_kernel_chain) {
      SpliceKernelChain(chain.user, first_user, process, out, chain.CutAtMaxStack());
    }
    // Kernel frames in front, or frames from the kernel's chain behind: not the memo's alone.
    if (first_user != 0 || out->frames.size() != unwound) out->replayed_from = 0;
  } else if (first_user == 0) {
    // No user registers (a 32-bit task, or recorded without REGS_USER) and no kernel frames.
    out->end = StackEnd::kNoUnwindInfo;
  }
}

void DwarfUnwinder::UnwindUser(const sampler::SampleView& sample, const ProcessView& process,
                               bool in_syscall, UnwoundStack* out) {
  UnwindMemo::Key key;
  key.in_syscall = in_syscall;
  key.pid = process.pid;
  key.stack_bytes = static_cast<uint32_t>(sample.stack_user.size());
  key.generation = process.address_space != nullptr ? process.address_space->generation() : 0;
  if (!RegsFromSample(sample.regs_user, options_.regs_mask, &key.regs) ||
      !key.regs.Has(kDwarfRa) || !key.regs.Has(kDwarfRsp)) {
    out->end = StackEnd::kNoUnwindInfo;
    return;
  }
  if (key.regs.Has(kDwarfRbp)) out->sampled_rbp = key.regs.value[kDwarfRbp];
  StackCopy stack{key.regs.sp(), sample.stack_user};
  uint32_t regs_read = 0;
  // DwarfRegs::loaded_from holds offsets below 64 KiB (the kernel copies at most 65,528 bytes).
  if (!options_.memoize || sample.stack_user.size() > UINT16_MAX) {
    Walk(key.regs, in_syscall, stack, process, out, &regs_read);
    return;
  }
  if (const UnwindMemo::Outcome* memo = memo_.Replay(key, stack, out); memo != nullptr) {
    out->end = memo->end;
    out->stack_high = memo->stack_high;
    out->caller_cfa = memo->caller_cfa;
    stats_.fp_fallback_frames += memo->stats.fp_fallback_frames;
    stats_.expr_frames += memo->stats.expr_frames;
    out->replayed_from = memo->entry_id;
    ++stats_.replayed_stacks;
    return;
  }
  const size_t first_user = out->frames.size();
  const UnwinderStats before = stats_;
  stack.log = memo_.StartLog();
  Walk(key.regs, in_syscall, stack, process, out, &regs_read);
  memo_.Store(key, regs_read, stack, *out, first_user,
              {.end = out->end,
               .stack_high = out->stack_high,
               .caller_cfa = out->caller_cfa,
               .stats = {.fp_fallback_frames = stats_.fp_fallback_frames - before.fp_fallback_frames,
                         .expr_frames = stats_.expr_frames - before.expr_frames}});
}

bool DwarfUnwinder::LeafReturnStep(const DwarfRegs& regs, const StackCopy& stack,
                                   const ProcessView& process, DwarfRegs* next) {
  uint64_t ra = 0;
  // Logged whatever it holds: the step taken or not depends on it.
  if (stack.ReadUsed(regs.sp(), &ra) != StepError::kNone || ra == 0 || ra == regs.pc()) {
    return false;
  }
  const sampler::Mapping* m = process.address_space->Find(ra - 1);
  if (m == nullptr || m->module == sampler::kNoModule || (m->prot & PROT_EXEC) == 0) return false;
  ElfCfi* elf = files_.Get(*m, process);
  if (elf == nullptr || elf->Find(m->FileOffset(ra - 1)) == nullptr) return false;
  *next = regs;  // nothing was pushed or saved: every other register is as it was
  next->Set(kDwarfRsp, regs.sp() + 8);
  next->ClearOrigin(kDwarfRsp);
  next->Load(kDwarfRa, ra, regs.sp() - stack.base);
  return true;
}

bool DwarfUnwinder::NewThreadAtClone(const DwarfRegs& regs, const StackCopy& stack,
                                     const ProcessView& process, uint32_t* regs_read) const {
  // Each condition read is a dependency of the result, memoized or not.
  *regs_read |= 1u << kDwarfRax;
  if (!regs.Has(kDwarfRax) || regs.value[kDwarfRax] != 0) return false;
  uint64_t top = 0;
  if (stack.ReadUsed(regs.sp(), &top) != StepError::kNone) return false;  // a copy cut short
  if (top == 0) return true;
  const sampler::Mapping* m = process.address_space->Find(top - 1);
  return m == nullptr || (m->prot & PROT_EXEC) == 0;
}

void DwarfUnwinder::Walk(const DwarfRegs& sampled, bool in_syscall, const StackCopy& stack,
                         const ProcessView& process, UnwoundStack* out, uint32_t* regs_read) {
  // The pc finds the first rule and the sp is where the copy starts.
  *regs_read = (1u << kDwarfRa) | (1u << kDwarfRsp);
  // Two register sets used in turn (this frame, its caller), so a step copies no registers.
  DwarfRegs sets[2];
  sets[0] = sampled;
  DwarfRegs* cur = &sets[0];
  DwarfRegs* next_regs = &sets[1];
  const size_t first_frame = out->frames.size();
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
        IsAnonymousCode(process.modules->Get(mapping->module).path)) {
      out->end = StackEnd::kNoModule;  // JIT or other anonymous code: stop cleanly
      return;
    }
    const CfiRule* rule = elf != nullptr ? elf->Find(mapping->FileOffset(lookup)) : nullptr;
    StepError err;
    bool signal_frame = false;
    if (rule != nullptr) {
      uint64_t cfa;
      err = ApplyCfiRule(*rule, elf->ops(), regs, stack, &next, &cfa);
      *regs_read |= next.depends;
      signal_frame = rule->signal_frame;
      // A handler "returns" to the first instruction of the signal trampoline (__restore_rt):
      // pc - 1 finds its CFI (glibc covers that byte on purpose) but lies before its symbol, so
      // the trampoline is named from its exact pc (perf shows it as [unknown]).
      if (signal_frame) out->frames.back().kind = FrameAddressKind::kInstructionPointer;
      stats_.expr_frames += !rule->fast;
    } else {
      // No CFI. A leaf stopped in a system call, in a module that has CFI elsewhere, returns to
      // [sp] when that word is a return address (LeafReturnStep); otherwise rbp decides, as the
      // outermost frame's mark or through a frame-pointer step.
      const bool leaf_at_syscall = in_syscall && out->frames.size() == first_frame + 1 &&
                                   elf != nullptr && elf->has_cfi() &&
                                   AfterSyscallInstruction(*elf, *mapping, pc);
      if (leaf_at_syscall && LeafReturnStep(regs, stack, process, &next)) {
        err = StepError::kNone;
      } else if (leaf_at_syscall && NewThreadAtClone(regs, stack, process, regs_read)) {
        out->end = StackEnd::kComplete;  // the clone system call is its outermost frame
        out->stack_high = regs.sp();
        return;
      } else if (NoteUse(regs, kDwarfRbp, stack, regs_read);
                 regs.Has(kDwarfRbp) && regs.value[kDwarfRbp] == 0) {
        // rbp = 0 is the psABI's mark of the outermost frame (the kernel starts a process with
        // rbp = 0 and the loader's entry code, which has no CFI, keeps it).
        out->end = StackEnd::kComplete;
        out->stack_high = regs.sp();  // every read so far was below this frame's sp
        return;
      } else if (!options_.frame_pointer_fallback) {
        out->end = StackEnd::kNoUnwindInfo;
        return;
      } else {
        err = FramePointerStep(regs, stack, &next);
        *regs_read |= next.depends;
        ++stats_.fp_fallback_frames;
        if (err != StepError::kNone && err != StepError::kBeyondStack) {
          out->end = StackEnd::kNoUnwindInfo;
          return;
        }
      }
    }
    if (err != StepError::kNone) {
      out->end = EndFor(err);
      return;
    }
    // What follows decides on the caller's pc and sp.
    NoteUse(next, kDwarfRa, stack, regs_read);
    NoteUse(next, kDwarfRsp, stack, regs_read);
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
    // The leaf alone may leave sp where it was: glibc's __vfork pops its return address into a
    // register before the system call (its CFI: CFA = rsp, return address in rdi), which is
    // where a vfork parent waits. Only once, so no walk can go round in a circle.
    const bool leaf_keeps_sp = out->frames.size() == first_frame + 1 && next.sp() == regs.sp() &&
                               next.pc() != pc;
    if (!signal_frame && next.sp() <= regs.sp() && !leaf_keeps_sp) {
      out->end = StackEnd::kBadFrame;
      return;
    }
    if (signal_frame && next.sp() == regs.sp() && next.pc() == pc) {
      out->end = StackEnd::kBadFrame;
      return;
    }
    exact_pc = signal_frame;
    // The second step: from the leaf's caller to the frame above it.
    if (out->frames.size() == first_frame + 2) out->caller_cfa = next.sp();
    out->frames.push_back(
        {next.pc(),
         exact_pc ? FrameAddressKind::kInstructionPointer : FrameAddressKind::kReturnAddress,
         false});
    std::swap(cur, next_regs);
  }
}

}  // namespace nativeprof::unwind
