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

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sampler/alloc_channel_layout.h"

#define NP_ALWAYS_INLINE inline __attribute__((always_inline))
#define NP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NP_LIKELY(x) __builtin_expect(!!(x), 1)

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
  // The thread's own slot in the channel (one writer: counting is plain loads and stores),
  // claimed on first use. Null before that, and for a thread past kThreadSlots, which counts in
  // `spill` and adds each call to the shared overflow slot (so it always takes the hooks'
  // general path).
  alloc_channel::ThreadSlot* slot = nullptr;
  bool claimed = false;
  bool sampling_started = false;              // until_sample holds a drawn distance
  // MallocIsElsewhere's probe: set while it calls the process's malloc, which sets `probe_hit`
  // if the call reached the hooks.
  bool malloc_probe = false;
  bool malloc_probe_hit = false;
  uint32_t busy = 0;          // >0 while inside the preload: nested allocations are not counted
  const void* last_alloc = nullptr;  // this thread's most recent allocation (for temporaries)
  int64_t pending_live = 0;   // live-heap change not yet added to the channel's live_bytes
  int64_t pending_high = 0;   // the most pending_live has been since it was last published
  int64_t until_sample = 0;   // bytes left before the next sampled allocation
  uint64_t rng = 0;           // xorshift state; 0 = not seeded
  uintptr_t stack_top = 0;    // where stack copies end; 0 = not known yet
  uintptr_t stack_lo = 0;     // the mapping that held sp when stack_top was found
  uintptr_t stack_hi = 0;
  uint32_t pid = 0;           // cached for the records (0 = not yet; reset by fork)
  uint32_t tid = 0;
  // The stack copy of this thread's last allocation record, against which the next one is sent
  // as a difference (alloc_channel::kAllocDeltaSampleId). Allocated with glibc's own malloc on
  // the first sample, freed when the thread exits; `last_words` 0 = none (send the next whole).
  uint64_t* last_stack = nullptr;
  uintptr_t last_sp = 0;
  uintptr_t snap_end = 0;     // where last_stack's window of addresses ends (SnapshotWord)
  uint32_t last_words = 0;
  uint32_t last_tid = 0;      // whose copy it is: a forked child's copy of it is its parent's
  uint32_t deltas = 0;        // deltas sent since the last whole record (alloc_channel::kMaxDeltas)
  bool last_stack_released = false;  // the thread is exiting: whole records, no new buffer
  // A thread past kThreadSlots counts a call here; MergeSpill then moves it into the channel's
  // shared overflow slot, so the spill is empty between calls (and at a fork).
  alloc_channel::ThreadSlot spill{};
  // The thread's batch of frees in the channel (alloc_channel::FreeBatch) under --alloc=1; null
  // otherwise, and for a thread past kThreadSlots, whose frees are written one by one.
  alloc_channel::FreeBatch* batch = nullptr;
};

// A block's header tag (see alloc_hooks.cc): 12 bits that no glibc chunk header can show where
// the tag lies (the upper half of its size field, 0 below 4 GiB), the number of the process
// image that allocated the block (mod 2^16), which tells a forked child's free of its copy of a
// parent's block from one of its own, and 4 flag bits.
inline constexpr uint32_t kTagMagic = 0x6e7u << 20;
inline constexpr uint32_t kTagMagicMask = 0xfffu << 20;
inline constexpr int kTagImageShift = 4;
inline constexpr uint32_t kTagFlagMask = 0xf;

// What the process's first call into the library finds out, in memory of the process's own:
// once attached, an anonymous page the kernel hands a forked child zero-filled
// (MADV_WIPEONFORK, Linux 4.14). A child forked without glibc's atfork handlers (a raw fork or
// clone system call, _Fork) thus finds no channel at its first call and registers as a process
// of its own, with thread slots and an image number of its own, as one forked by fork() does;
// before, it counted into its parent's slots (racing with its parent's plain stores) and
// tagged its blocks with its parent's image.
struct ProcessPage {
  // The channel once attached; null before, when the process is not being profiled, and in a
  // forked child until it has registered.
  std::atomic<alloc_channel::Control*> channel;
  // The complement of the tag of a block this image allocates, flags clear (kTagMagic and the
  // image's number). 0 until the image registers, in a forked child's blank page too: the tag
  // is then ~0, which no header holds (a block without one shows 0 there), so the image's
  // frees take the general path, which registers it.
  uint32_t not_own_tag;
  uint32_t pid;  // the process that registered it (getpid() then)
  uint32_t image;  // the image's number (Control::images)
  // Threads of this image that claimed a free batch (--alloc=1): with only the one ending the
  // process, its end need not look through every thread slot for the others'.
  std::atomic<uint32_t> batch_threads;
};

namespace internal {
// Never null: a static page (no channel, no tag) until the process attaches. Set once, by
// the process's first allocation, which comes before it can start a thread.
// Hidden, so the hooks load it directly rather than through the GOT.
extern ProcessPage* g_process __attribute__((visibility("hidden")));
extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

// The channel when Channel() found none: attaches on the process's first call, and registers a
// child forked without the atfork handlers on its first.
alloc_channel::Control* AttachOnce();
void ClaimSlot(ThreadState& t, alloc_channel::Control& c);
// The sampling decision once until_sample has run out (or was never drawn).
bool SampleDue(ThreadState& t, const alloc_channel::Control& c);
void MergeSpill(ThreadState& t, alloc_channel::Control& c);

// A slot has one writer: a plain load and store (no locked instruction) is enough.
NP_ALWAYS_INLINE void Add(std::atomic<uint64_t>& field, uint64_t n) {
  field.store(field.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
}  // namespace internal

// The channel this process reports to; null when the process is not being profiled (no
// NATIVEPROF_ALLOC_CHANNEL, or it could not be mapped), in which case the hooks only forward.
NP_ALWAYS_INLINE alloc_channel::Control* Channel() {
  // Relaxed: set by the process's first allocation, or a forked child's first call, before the
  // process can start a thread.
  alloc_channel::Control* c = internal::g_process->channel.load(std::memory_order_relaxed);
  if (__builtin_expect(c != nullptr, 1)) return c;
  return internal::AttachOnce();
}

NP_ALWAYS_INLINE ThreadState& CurrentThread() { return internal::t_state; }

// The tag of a block this image allocates with `flags`.
NP_ALWAYS_INLINE uint32_t OwnTag(uint32_t flags = 0) {
  return ~internal::g_process->not_own_tag | flags;
}
// Whether a block of ours was allocated by this image, rather than one it was forked from.
NP_ALWAYS_INLINE bool AllocatedHere(uint32_t tag) {
  return (tag & ~kTagFlagMask) == ~internal::g_process->not_own_tag;
}

// Adds the thread's pending live-heap change to the channel (and raises the peak).
void FlushLive(ThreadState& t, alloc_channel::Control& c);
// FlushLive for the calling thread, if it has counted anything: before a fork, at exit, and at
// an _exit, which runs no destructor.
void PublishThisThread();
// The process is ending (exit, _exit): publishes the calling thread, then takes the process's
// live heap out of the run's live heap. What it never freed stays in the leaked totals (those
// are allocated minus freed bytes), but a later peak of the processes still running does not
// count it. What its threads publish after this goes to its own figures only.
void EndThisProcess();
// Process `pid`, a child the calling process has just reaped (a wait call returned its exit
// status), has ended: takes its live heap out of the run's live heap unless it did so itself,
// and writes the frees its threads had batched. It did neither when a signal killed it, or when
// it left its heap without exit or _exit.
void EndReapedProcess(pid_t pid);

// What every counted allocation does to the thread's counts. CountAllocation is this plus the
// rare steps (claiming a slot, publishing the live heap, sampling); a hook may call it alone when
// AllocationNeedsNoMore says none of those is due.
NP_ALWAYS_INLINE void CountAllocationBody(ThreadState& t, alloc_channel::ThreadSlot& s,
                                          const void* user, size_t size) {
  internal::Add(s.alloc_calls, 1);
  internal::Add(s.alloc_bytes, size);
  t.last_alloc = user;
  t.pending_live += static_cast<int64_t>(size);
  if (t.pending_live > t.pending_high) t.pending_high = t.pending_live;
  t.until_sample -= static_cast<int64_t>(size);
}
NP_ALWAYS_INLINE bool AllocationNeedsNoMore(const ThreadState& t, size_t size) {
  return t.slot != nullptr && t.pending_live + static_cast<int64_t>(size) <= kFlushBytes &&
         t.until_sample > static_cast<int64_t>(size);
}

// Where the general path counts: the thread's slot, or its spill.
NP_ALWAYS_INLINE alloc_channel::ThreadSlot& CountingSlot(ThreadState& t) {
  return t.slot != nullptr ? *t.slot : t.spill;
}

// Counts an allocation of `size` requested bytes at `user`; returns true when it is to be sampled.
// The caller then writes the sample, if any, and only after it calls PublishLiveIfDue: the live
// heap this allocation raises may be a new peak, whose mark must follow the allocation's own
// record in the ring, or the set copied at the mark would lack the block that made the peak.
inline bool CountAllocation(ThreadState& t, alloc_channel::Control& c, const void* user,
                            size_t size) {
  if (!t.claimed) internal::ClaimSlot(t, c);
  CountAllocationBody(t, CountingSlot(t), user, size);
  if (t.slot == nullptr) internal::MergeSpill(t, c);
  if (t.until_sample > 0) return false;
  return internal::SampleDue(t, c);
}

// Publishes the thread's live-heap change once it has grown past kFlushBytes.
inline void PublishLiveIfDue(ThreadState& t, alloc_channel::Control& c) {
  if (t.pending_live > kFlushBytes) FlushLive(t, c);
}

// What every counted free does (see CountAllocationBody); returns whether it was a temporary
// allocation (freed with nothing else allocated or freed by its thread in between, as heaptrack
// counts them).
NP_ALWAYS_INLINE bool CountFreeBody(ThreadState& t, alloc_channel::ThreadSlot& s,
                                    const void* user, size_t size) {
  internal::Add(s.free_calls, 1);
  internal::Add(s.freed_bytes, size);
  // heaptrack's rule: temporary when nothing else happened in the thread between the allocation
  // and its free, not even another free.
  const bool temporary = user == t.last_alloc;
  if (temporary) internal::Add(s.temporary, 1);
  t.last_alloc = nullptr;
  t.pending_live -= static_cast<int64_t>(size);
  return temporary;
}
NP_ALWAYS_INLINE bool FreeNeedsNoMore(const ThreadState& t, size_t size) {
  return t.slot != nullptr && t.pending_live - static_cast<int64_t>(size) >= -kFlushBytes;
}

// Whether a realloc's release of `old_size` then allocation of `new_size` need only the two
// bodies (FreeNeedsNoMore, then AllocationNeedsNoMore on what the release left).
NP_ALWAYS_INLINE bool ReallocationNeedsNoMore(const ThreadState& t, size_t old_size,
                                              size_t new_size) {
  const int64_t released = t.pending_live - static_cast<int64_t>(old_size);
  return t.slot != nullptr && released >= -kFlushBytes &&
         released + static_cast<int64_t>(new_size) <= kFlushBytes &&
         t.until_sample > static_cast<int64_t>(new_size);
}

// Counts the free of a counted block; returns whether it was a temporary allocation.
inline bool CountFree(ThreadState& t, alloc_channel::Control& c, const void* user, size_t size) {
  if (!t.claimed) internal::ClaimSlot(t, c);
  const bool temporary = CountFreeBody(t, CountingSlot(t), user, size);
  if (t.slot == nullptr) internal::MergeSpill(t, c);
  if (t.pending_live < -kFlushBytes) FlushLive(t, c);
  return temporary;
}

// Counts the free of a block an earlier image allocated (a forked child freeing its copy): apart
// from the totals, which count the block at the image that allocated it, and not in this
// image's live heap, which never held it. It breaks a temporary allocation as any free does.
inline void CountInheritedFree(ThreadState& t, alloc_channel::Control& c, size_t size) {
  if (!t.claimed) internal::ClaimSlot(t, c);
  alloc_channel::ThreadSlot& s = CountingSlot(t);
  internal::Add(s.inherited_frees, 1);
  internal::Add(s.inherited_freed_bytes, size);
  t.last_alloc = nullptr;
  if (t.slot == nullptr) internal::MergeSpill(t, c);
}

// Counts an allocation written to the ring.
inline void CountSampled(ThreadState& t, alloc_channel::Control& c) {
  internal::Add(CountingSlot(t).sampled, 1);
  if (t.slot == nullptr) internal::MergeSpill(t, c);
}

}  // namespace nativeprof::preload

#endif  // NATIVEPROF_PRELOAD_ALLOC_ACCOUNTING_H_
