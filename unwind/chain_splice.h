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
// part of the kernel's frame-pointer walk, KernelCallchain::user; its n-th entry with that
// address when the unwind holds it n times, as a recursion does, or its (n-1)-th when the chain
// lacks the leaf's return address, as UnwoundStack::caller_cfa and sampled_rbp tell; a walk of
// the leaf alone has no return address to find, and is not joined) and appends the kernel's
// frames above it, if every one of them lies in an executable file mapping of the process. Sets
// out->spliced and end = kComplete then, unless `chain_cut` (KernelCallchain::CutAtMaxStack: the
// chain lacks its outermost frames), in which case the frames are appended but the stack stays
// truncated. Returns whether it completed the stack.
bool SpliceKernelChain(std::span<const uint64_t> user_chain, size_t first_user_frame,
                       const ProcessView& process, UnwoundStack* out, bool chain_cut = false);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_CHAIN_SPLICE_H_
