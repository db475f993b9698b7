// What both DWARF backends share around the user-stack unwind: the kernel frames in front (the
// part of PERF_SAMPLE_CALLCHAIN before PERF_CONTEXT_USER), the hybrid splice that finishes a
// truncated DWARF unwind with the kernel's frame-pointer chain, and per-cause counters.
// Drain thread only.
#ifndef NATIVEPROF_UNWIND_CHAIN_SPLICE_H_
#define NATIVEPROF_UNWIND_CHAIN_SPLICE_H_

#include <cstdint>
#include <span>

#include "unwind/unwinder.h"

namespace nativeprof::unwind {

// Appends the kernel frames of a raw callchain (leaf first, markers skipped) to `out` and returns
// the user part: the entries after PERF_CONTEXT_USER (empty when there is none).
std::span<const uint64_t> AppendKernelFrames(std::span<const uint64_t> callchain,
                                             UnwoundStack* out);

// When `out` ends in kTruncatedStack: finds the last unwound user frame in `user_chain` (the
// kernel's frame-pointer walk) and appends the kernel's frames above it, if every one of them
// lies in an executable file mapping of the process. Sets out->spliced and end = kComplete then,
// unless the whole callchain (`chain_entries` entries, markers included) reached the kernel's
// perf_event_max_stack, in which case the frames are appended but the stack stays truncated.
// Returns whether it completed the stack.
bool SpliceKernelChain(std::span<const uint64_t> user_chain, size_t first_user_frame,
                       const ProcessView& process, UnwoundStack* out, size_t chain_entries = 0);

// /proc/sys/kernel/perf_event_max_stack (127 if unreadable), read once.
size_t KernelMaxStack();

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
