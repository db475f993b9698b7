// The one reader of PERF_SAMPLE_CALLCHAIN: splits the kernel's raw chain at its PERF_CONTEXT_*
// markers into the kernel part and the user part, and says whether the kernel cut the chain at
// perf_event_max_stack. Every unwinder (frame pointers, both DWARF backends and their splice)
// goes through it. Pure functions; KernelMaxStack() reads /proc once, thread-safe.
#ifndef NATIVEPROF_UNWIND_KERNEL_CALLCHAIN_H_
#define NATIVEPROF_UNWIND_KERNEL_CALLCHAIN_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "unwind/unwinder.h"

namespace nativeprof::unwind {

// The kernel's default /proc/sys/kernel/perf_event_max_stack, used when the file is unreadable.
inline constexpr size_t kDefaultKernelMaxStack = 127;

// How many frames the kernel writes into a callchain at most: nativeprof leaves
// perf_event_attr.sample_max_stack at 0, so every event gets /proc/sys/kernel/perf_event_max_stack
// (kDefaultKernelMaxStack if unreadable), read once.
size_t KernelMaxStack();

// One callchain split at its markers. Both parts are leaf first: entry 0 is where that context
// was interrupted (an exact instruction pointer), the rest are return addresses.
struct KernelCallchain {
  std::span<const uint64_t> kernel;  // the entries after PERF_CONTEXT_KERNEL
  std::span<const uint64_t> user;    // the entries after PERF_CONTEXT_USER
  size_t markers = 0;                // PERF_CONTEXT_* entries
  size_t frames = 0;                 // all other entries, including those in neither part

  // Whether the kernel stopped the walk at `max_stack` entries, so the outermost frames are
  // missing. The kernel counts every frame of both parts against the limit, never a marker
  // (perf_callchain_store vs perf_callchain_store_context, kernel/events/callchain.c).
  bool CutAtMaxStack(size_t max_stack = KernelMaxStack()) const { return frames >= max_stack; }
};

// Splits `callchain` (raw, leaf first). The kernel writes at most one kernel and one user context
// (PERF_CONTEXT_KERNEL, then PERF_CONTEXT_USER); entries before the first marker, under any other
// marker (hypervisor, guest) or in a repeated context are in neither part: they cannot be
// attributed to an address space nativeprof models.
KernelCallchain SplitCallchain(std::span<const uint64_t> callchain);

// Appends one part of a split chain to `out->frames` (entry 0 as kInstructionPointer, the rest as
// kReturnAddress), stopping at kMaxFrames. Returns false when the limit cut the part short.
bool AppendCallchainFrames(std::span<const uint64_t> part, bool kernel, UnwoundStack* out);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_KERNEL_CALLCHAIN_H_
