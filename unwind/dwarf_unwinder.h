// The native DWARF unwinder (`--call-graph dwarf`, DwarfBackend::kNative): starts from the sampled
// user registers and walks the copied user stack with each module's CFI (ElfCfi, cached per PC),
// falling back to frame pointers for a frame whose module has no CFI. Kernel frames go in front;
// a walk cut short by the end of the copy is finished with the kernel's frame-pointer chain when
// that is consistent. A stack seen before is replayed from an exact memo (UnwindMemo). Drain
// thread only; not thread-safe; no allocation in steady state.
#ifndef NATIVEPROF_UNWIND_DWARF_UNWINDER_H_
#define NATIVEPROF_UNWIND_DWARF_UNWINDER_H_

#include <cstdint>

#include "unwind/chain_splice.h"
#include "unwind/module_files.h"
#include "unwind/unwind_memo.h"
#include "unwind/unwinder.h"
#include "unwind/x86_64_regs.h"

namespace nativeprof::unwind {

struct DwarfUnwinderOptions {
  // The sample_regs_user the samples were recorded with.
  uint64_t regs_mask = DwarfSampleRegsMask();
  bool frame_pointer_fallback = true;
  bool splice_kernel_chain = true;
  // Replays the unwind of a stack seen before (UnwindMemo) instead of walking it again.
  bool memoize = true;
  // Where separate debug files are searched for .debug_frame (the symbolizer's list).
  std::vector<std::string> debug_dirs = module::DefaultDebugDirs();
};

class DwarfUnwinder : public Unwinder {
 public:
  explicit DwarfUnwinder(DwarfUnwinderOptions options = {})
      : options_(options), files_(options.debug_dirs) {}

  void Unwind(const sampler::SampleView& sample, const ProcessView& process,
              UnwoundStack* out) override;

  UnwinderStats stats() const override { return stats_; }
  CfiCacheStats cfi_stats() const { return files_.TotalStats(); }
  const UnwindMemoStats& memo_stats() const { return memo_.stats(); }
  ModuleFiles& files() { return files_; }

 private:
  // `in_syscall`: the sample has kernel frames in front, so the leaf stopped in a system call
  // (or a fault).
  void UnwindUser(const sampler::SampleView& sample, const ProcessView& process, bool in_syscall,
                  UnwoundStack* out);
  // The walk itself, from the sampled registers, with no memo. `regs_read`: the sampled
  // registers whose values the walk depended on (DwarfRegs::depends).
  void Walk(const DwarfRegs& sampled, bool in_syscall, const StackCopy& stack,
            const ProcessView& process, UnwoundStack* out, uint32_t* regs_read);
  // The step out of a leaf stopped in a system call that no CFI covers, in a module that has
  // CFI (glibc's __clone3 ends its FDE before its system call, so that the new thread does not
  // unwind into its parent's frames; a posix_spawn parent waits right there): a system call
  // wrapper sets up no frame, so its return address is at [sp]. Taken only when that word is an
  // address CFI covers, as a return address is; false otherwise (the frame-pointer step is
  // next). Not for a leaf in user code: hand-written assembly may have pushed a code pointer.
  bool LeafReturnStep(const DwarfRegs& regs, const StackCopy& stack, const ProcessView& process,
                      DwarfRegs* next);
  // Whether a leaf stopped in a system call with no CFI and no return address at [sp] is the
  // child's side of a clone: a new thread that has not run its first instruction (the kernel
  // sampled its switch before it ran), on a stack of its own that holds nothing yet, and with its
  // parent's rbp, which leads into the parent's stack. Only when the copy holds [sp] (a copy cut
  // short proves nothing), rax is 0 (clone returns 0 in the child, the child's tid in the
  // parent) and [sp] points into no executable mapping (a return address into code without CFI
  // would). Adds the registers it read to `regs_read`.
  bool NewThreadAtClone(const DwarfRegs& regs, const StackCopy& stack, const ProcessView& process,
                        uint32_t* regs_read) const;

  DwarfUnwinderOptions options_;
  ModuleFiles files_;
  UnwindMemo memo_;
  UnwinderStats stats_;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_DWARF_UNWINDER_H_
