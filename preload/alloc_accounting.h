// Inside the profiled process: what the allocation hooks count on every call (exact totals in the
// thread's slot of the shared channel, the live heap and its peak, temporary allocations) and the
// Poisson-by-bytes decision of which allocations to sample. Every function here may be called
// from any thread at any time, including from inside the allocator hooks during the process's
// own start-up, so none of it allocates, locks, or uses anything of libstdc++ beyond atomics.
#ifndef NATIVEPROF_PRELOAD_ALLOC_ACCOUNTING_H_
#define NATIVEPROF_PRELOAD_ALLOC_ACCOUNTING_H_

#include <cstddef>
#include <cstdint>

#include "sampler/alloc_channel_layout.h"

namespace nativeprof::preload {

// Where the hooked allocation function was called from: the frame pointer of the exported hook
// (which is compiled with frame pointers), from which the caller's return address, stack pointer
// and frame pointer follow.
struct CallSite {
  const void* hook_frame = nullptr;  // __builtin_frame_address(0) in the exported function
};

// The channel this process reports to; null when the process is not being profiled (no
// NATIVEPROF_ALLOC_CHANNEL, or it could not be mapped), in which case the hooks only forward.
alloc_channel::Control* Channel();

// Per-thread state, in static TLS (the hooks run before and after anything else in a thread).
struct ThreadState {
  alloc_channel::ThreadSlot* slot = nullptr;  // claimed on first use
  bool shared_slot = false;                   // slot is the shared overflow slot (atomic adds)
  uint32_t busy = 0;          // >0 while inside the preload: nested allocations are not counted
  const void* last_alloc = nullptr;  // this thread's most recent allocation (for temporaries)
  int64_t pending_live = 0;   // live-heap change not yet added to the channel's live_bytes
  int64_t until_sample = 0;   // bytes left before the next sampled allocation
  uint64_t rng = 0;           // xorshift state; 0 = not seeded
  uintptr_t stack_top = 0;    // highest address of this thread's stack; 0 = not known yet
  uint32_t pid = 0;           // cached for the records (0 = not yet; reset by fork)
  uint32_t tid = 0;
};
ThreadState& CurrentThread();

// Counts an allocation of `size` requested bytes at `user`; returns true when it is to be sampled.
bool CountAllocation(ThreadState& t, alloc_channel::Control& c, const void* user, size_t size);
// Counts the free of a counted block; returns whether it was a temporary allocation (freed with
// nothing else allocated or freed by its thread in between, as heaptrack counts them).
bool CountFree(ThreadState& t, alloc_channel::Control& c, const void* user, size_t size);

// Counts an allocation written to the ring.
void CountSampled(ThreadState& t);

// Adds the thread's pending live-heap change to the channel (and raises the peak).
void FlushLive(ThreadState& t, alloc_channel::Control& c);

}  // namespace nativeprof::preload

#endif  // NATIVEPROF_PRELOAD_ALLOC_ACCOUNTING_H_
