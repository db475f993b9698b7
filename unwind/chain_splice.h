// What both DWARF backends share around the user-stack unwind: the hybrid splice that finishes a
// truncated DWARF unwind with the user part of the kernel's frame-pointer chain
// (SplitCallchain, kernel_callchain.h), and per-cause counters. Drain thread only.
#ifndef NATIVEPROF_UNWIND_CHAIN_SPLICE_H_
#define NATIVEPROF_UNWIND_CHAIN_SPLICE_H_

#include <cstdint>
#include <span>

#include "unwind/unwinder.h"

namespace nativeprof::unwind {

// When `out` ends in kTruncatedStack: finds the last unwound user frame in `user_chain` (the user
// part of the kernel's frame-pointer walk, KernelCallchain::user) and appends the kernel's frames
// above it, if every one of them lies in an executable file mapping of the process. Sets
// out->spliced and end = kComplete then, unless `chain_cut` (KernelCallchain::CutAtMaxStack: the
// chain lacks its outermost frames), in which case the frames are appended but the stack stays
// truncated. Returns whether it completed the stack.
bool SpliceKernelChain(std::span<const uint64_t> user_chain, size_t first_user_frame,
                       const ProcessView& process, UnwoundStack* out, bool chain_cut = false);

// Counters of one unwinder, by how each stack ended.
struct UnwindStats {
  uint64_t samples = 0;
  uint64_t frames = 0;
  uint64_t by_end[kStackEndCount] = {};
  uint64_t spliced = 0;
  uint64_t fp_fallback_frames = 0;  // frames found with frame pointers for lack of CFI
  uint64_t expr_frames = 0;         // frames whose rule needed the expression interpreter

  void Count(const UnwoundStack& s) {
    ++samples;
    frames += s.frames.size();
    ++by_end[static_cast<int>(s.end)];
    spliced += s.spliced;
  }
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_CHAIN_SPLICE_H_
