// Inside the profiled process: what the allocation hooks count on every call (exact totals in the
// thread's slot of the shared channel, the live heap and its peak, temporary allocations) and the
// Poisson-by-bytes decision of which allocations to sample. Every function here may be called
// from any thread at any time, including from inside the allocator hooks during the process's
// own start-up, so none of it allocates, locks, or uses anything of libstdc++ beyond atomics.
//
// The per-call counting is inline here so that each exported hook compiles to one function
// with no call besides glibc's: the unsampled path is the profiler's cost on every allocation
// of the program. What runs rarely (attaching, claiming a slot, publishing the live heap,
// drawing the next sample distance) is out of line in the .cc.
#ifndef NATIVEPROF_PRELOAD_ALLOC_ACCOUNTING_H_
#define NATIVEPROF_PRELOAD_ALLOC_ACCOUNTING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sampler/alloc_channel_layout.h"

#define NP_ALWAYS_INLINE inline __attribute__((always_inline))
#define NP_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace nativeprof::preload {

// Where the hooked allocation function was called from: the frame pointer of the exported hook
// (which is compiled with frame pointers), from which the caller's return address, stack pointer
// and frame pointer follow.
struct CallSite {
  const void* hook_frame = nullptr;  // __builtin_frame_address(0) in the exported function
};

// A thread's live-heap change is published once it passes this, so the peak of a multi-threaded
// program is never off by more than this per other thread (a thread that freed blocks another
// allocated has not published that yet). A single thread's peak stays exact: the most its
// unpublished change reached is published with it. An atomic add per 4 KiB costs little.
inline constexpr int64_t kFlushBytes = 4096;

// Per-thread state, in static TLS (the hooks run before and after anything else in a thread).
struct ThreadState {
  alloc_channel::ThreadSlot* slot = nullptr;  // claimed on first use
  bool shared_slot = false;                   // slot is the shared overflow slot (atomic adds)
  bool sampling_started = false;              // until_sample holds a drawn distance
  uint32_t busy = 0;          // >0 while inside the preload: nested allocations are not counted
  const void* last_alloc = nullptr;  // this thread's most recent allocation (for temporaries)
  int64_t pending_live = 0;   // live-heap change not yet added to the channel's live_bytes
  int64_t pending_high = 0;   // the most pending_live has been since it was last published
  int64_t until_sample = 0;   // bytes left before the next sampled allocation
  uint64_t rng = 0;           // xorshift state; 0 = not seeded
  uintptr_t stack_top = 0;    // highest address of this thread's stack; 0 = not known yet
  uint32_t pid = 0;           // cached for the records (0 = not yet; reset by fork)
  uint32_t tid = 0;
};

namespace internal {
// 0: not attached yet, 1: attached (g_control set), 2: not profiling, 3: attaching.
extern std::atomic<int> g_attach_state;
extern alloc_channel::Control* g_control;
extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

alloc_channel::Control* AttachOnce();
void ClaimSlot(ThreadState& t, alloc_channel::Control& c);
// The sampling decision once until_sample has run out (or was never drawn).
bool SampleDue(ThreadState& t, const alloc_channel::Control& c);

NP_ALWAYS_INLINE void Add(std::atomic<uint64_t>& field, uint64_t n, bool shared) {
  if (NP_UNLIKELY(shared)) {
    field.fetch_add(n, std::memory_order_relaxed);
  } else {
    // The slot has one writer: a plain load and store (no locked instruction) is enough.
    field.store(field.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
}
}  // namespace internal

// The channel this process reports to; null when the process is not being profiled (no
// NATIVEPROF_ALLOC_CHANNEL, or it could not be mapped), in which case the hooks only forward.
NP_ALWAYS_INLINE alloc_channel::Control* Channel() {
  const int state = internal::g_attach_state.load(std::memory_order_acquire);
  if (__builtin_expect(state == 1, 1)) return internal::g_control;
  return state == 0 ? internal::AttachOnce() : nullptr;
}

NP_ALWAYS_INLINE ThreadState& CurrentThread() { return internal::t_state; }

// Adds the thread's pending live-heap change to the channel (and raises the peak).
void FlushLive(ThreadState& t, alloc_channel::Control& c);

// Counts an allocation of `size` requested bytes at `user`; returns true when it is to be sampled.
NP_ALWAYS_INLINE bool CountAllocation(ThreadState& t, alloc_channel::Control& c, const void* user,
                                      size_t size) {
  if (NP_UNLIKELY(t.slot == nullptr)) internal::ClaimSlot(t, c);
  alloc_channel::ThreadSlot& s = *t.slot;
  internal::Add(s.alloc_calls, 1, t.shared_slot);
  internal::Add(s.alloc_bytes, size, t.shared_slot);
  t.last_alloc = user;
  t.pending_live += static_cast<int64_t>(size);
  if (t.pending_live > t.pending_high) {
    t.pending_high = t.pending_live;
    if (NP_UNLIKELY(t.pending_live > kFlushBytes)) FlushLive(t, c);
  }
  t.until_sample -= static_cast<int64_t>(size);
  if (__builtin_expect(t.until_sample > 0, 1)) return false;
  return internal::SampleDue(t, c);
}

// Counts the free of a counted block; returns whether it was a temporary allocation (freed with
// nothing else allocated or freed by its thread in between, as heaptrack counts them).
NP_ALWAYS_INLINE bool CountFree(ThreadState& t, alloc_channel::Control& c, const void* user,
                                size_t size) {
  if (NP_UNLIKELY(t.slot == nullptr)) internal::ClaimSlot(t, c);
  alloc_channel::ThreadSlot& s = *t.slot;
  internal::Add(s.free_calls, 1, t.shared_slot);
  internal::Add(s.freed_bytes, size, t.shared_slot);
  // heaptrack's rule: temporary when nothing else happened in the thread between the allocation
  // and its free, not even another free.
  const bool temporary = user == t.last_alloc;
  if (temporary) internal::Add(s.temporary, 1, t.shared_slot);
  t.last_alloc = nullptr;
  t.pending_live -= static_cast<int64_t>(size);
  if (NP_UNLIKELY(t.pending_live < -kFlushBytes)) FlushLive(t, c);
  return temporary;
}

// Counts an allocation written to the ring.
inline void CountSampled(ThreadState& t) { internal::Add(t.slot->sampled, 1, t.shared_slot); }

}  // namespace nativeprof::preload

#endif  // NATIVEPROF_PRELOAD_ALLOC_ACCOUNTING_H_
