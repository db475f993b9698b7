// The allocation functions the preload interposes (LD_PRELOAD puts them before libc's), forwarding
// to glibc's own implementation through its __libc_* entry points, which need no symbol lookup
// and so are safe from the process's first allocation on.
//
// A profiled block carries a 16-byte header in front of the caller's pointer with its requested
// size, so frees subtract exactly what was added (the live heap and its peak are in requested
// bytes, as heaptrack counts them) and a sampled block's free can be reported. A pointer
// without the header's tag (a block allocated before the channel was attached, or by a
// non-interposed path) is forwarded unchanged.
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <errno.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstring>

#include "preload/alloc_accounting.h"
#include "preload/alloc_sample_writer.h"
#include "preload/allocator_backend.h"
#include "preload/record_clock.h"

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* ptr);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace nativeprof::preload {
namespace {

using alloc_channel::Control;

struct BlockHeader {
  uint64_t size;    // requested bytes
  uint32_t offset;  // from the start of glibc's block to the caller's pointer
  uint32_t tag;     // OwnTag(flags) of the image that allocated it
};
static_assert(sizeof(BlockHeader) == 16);
constexpr size_t kHeaderBytes = sizeof(BlockHeader);
// The header's tag overlaps the upper half of glibc's chunk size field for blocks that are not
// ours, which is 0 for every chunk under 4 GiB: no real chunk can carry kTagMagic.
constexpr uint32_t kSampled = 1;    // its allocation is in the ring; its free must be too
constexpr uint32_t kUncounted = 2;  // allocated inside the preload: not the program's
constexpr uint32_t kNextBlock = 4;  // from the program's own allocator (allocator_backend.h)
// Its offset is too big for the header (an alignment of 4 GiB or more): the header's is 0, and
// the 8 bytes in front of the header hold it.
constexpr uint32_t kFarBase = 8;

BlockHeader* HeaderOf(void* user) {
  return reinterpret_cast<BlockHeader*>(static_cast<char*>(user) - kHeaderBytes);
}
bool Ours(const BlockHeader* h) { return (h->tag & kTagMagicMask) == kTagMagic; }

// From the start of the allocator's block to `user`, whose header is `h`.
size_t BaseOffset(const void* user, const BlockHeader& h) {
  if ((h.tag & kFarBase) == 0) return h.offset;
  uint64_t offset;
  std::memcpy(&offset, static_cast<const char*>(user) - kHeaderBytes - 8, 8);
  return offset;
}

// Sets the header's offset, and kFarBase in `*flags` when it needs the far field.
void SetBaseOffset(void* user, BlockHeader* h, size_t offset, uint32_t* flags) {
  if (offset <= UINT32_MAX) {
    h->offset = static_cast<uint32_t>(offset);
    return;
  }
  h->offset = 0;
  const uint64_t far = offset;
  std::memcpy(static_cast<char*>(user) - kHeaderBytes - 8, &far, 8);
  *flags |= kFarBase;
}

// Where a block the preload did not allocate goes back to: the allocator the process runs on.
void ForeignFree(void* p) {
  if (BackendIsNext()) {
    NextFree(p);
  } else {
    __libc_free(p);
  }
}

// Frees the start of a block of ours, to the allocator its header says it came from.
void FreeBase(void* base, uint32_t tag) {
  if ((tag & kNextBlock) != 0) {
    NextFree(base);
  } else {
    __libc_free(base);
  }
}

bool SamplingOn(const Control& c) {
  static std::atomic<int> on{-1};
  int v = on.load(std::memory_order_relaxed);
  if (v < 0) {
    v = SampleLayoutSupported(c) ? 1 : 0;
    on.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

// Out of line: one allocation in RATE bytes' worth comes here.
__attribute__((noinline)) bool SampleAllocation(ThreadState& t, Control& c, const void* user,
                                                size_t size, const void* hook_frame) {
  // No reader any more (the profiler stopped, or died): nothing to copy a stack for. A child
  // that outlives the profiler then pays the counting only.
  if (!SamplingOn(c) || c.reader_gone.load(std::memory_order_relaxed) != 0) return false;
  // The writer's system calls (the wake FIFO, /proc/self/maps, the profiler's liveness) may set
  // errno; a malloc that succeeded must leave the program's as it was.
  const int saved_errno = errno;
  ++t.busy;
  const bool written = WriteAllocSample(t, c, CallSite{hook_frame}, user, size);
  --t.busy;
  errno = saved_errno;
  if (written) CountSampled(t, c);
  return written;
}

// Writes the header of a new block and counts it. `base` is what glibc returned.
// `origin` is kNextBlock for a block from the program's own allocator, else 0.
__attribute__((noinline)) void* TrackSlow(void* base, size_t size, size_t offset,
                                          const void* hook_frame, uint32_t origin) {
  Control* c = internal::g_process->channel.load(std::memory_order_acquire);
  char* user = static_cast<char*>(base) + offset;
  BlockHeader* h = HeaderOf(user);
  h->size = size;
  uint32_t flags = 0;
  SetBaseOffset(user, h, offset, &flags);
  ThreadState& t = CurrentThread();
  if (NP_UNLIKELY(t.malloc_probe)) t.malloc_probe_hit = true;
  if (t.busy != 0 || c == nullptr) {
    flags |= kUncounted;
  } else {
    if (CountAllocation(t, *c, user, size) && SampleAllocation(t, *c, user, size, hook_frame)) {
      flags |= kSampled;
    }
    PublishLiveIfDue(t, *c);  // after the sample (CountAllocation)
  }
  h->tag = OwnTag(flags | origin);
  return user;
}

// The hook_frame that stands for the frame of the exported hook the always-inline code is in:
// it is read where the rare path needs it, so no register holds it across glibc's call.
constexpr const void* kThisHooksFrame = nullptr;

// Track's common case inline, with no call: the hook then needs no registers saved around the
// rare steps, which cost more than the counting itself. `c` is the attached channel or null.
NP_ALWAYS_INLINE void* Track(Control* c, void* base, size_t size, size_t offset,
                             const void* hook_frame, uint32_t origin = 0) {
  if (NP_UNLIKELY(base == nullptr)) return nullptr;
  ThreadState& t = CurrentThread();
  if (NP_UNLIKELY(origin != 0 || c == nullptr || t.busy != 0 || offset > UINT32_MAX ||
                  !AllocationNeedsNoMore(t, size))) {
    return TrackSlow(base, size, offset,
                     hook_frame != kThisHooksFrame ? hook_frame : __builtin_frame_address(0),
                     origin);
  }
  char* user = static_cast<char*>(base) + offset;
  BlockHeader* h = HeaderOf(user);
  h->size = size;
  h->offset = static_cast<uint32_t>(offset);
  h->tag = OwnTag();
  CountAllocationBody(t, *t.slot, user, size);
  return user;
}

__attribute__((noinline)) void SampleFree(ThreadState& t, Control& c, void* user,
                                          bool temporary) {
  const int saved_errno = errno;  // as in SampleAllocation
  ++t.busy;
  WriteFreeSample(t, c, user, temporary);
  --t.busy;
  errno = saved_errno;
}

// The writer's bit of a FreeBatch entry: the block goes back to the program's own allocator.
constexpr uint64_t kEntryNextBlock = 2;
static_assert((kEntryNextBlock & alloc_channel::kFreeEntryFlagMask) == kEntryNextBlock &&
              kEntryNextBlock != alloc_channel::kFreeEntryTemporary);

// The largest block whose free is batched: the blocks of a batch stay allocated, and in the
// profiler's sampled live heap (its peak set), until it is written, so a thread that frees 32
// blocks and then idles holds at most 128 KiB that way. Most frees are of smaller blocks.
constexpr uint64_t kMaxBatchedBytes = 4096;

// Batches the free of a sampled block (alloc_channel::FreeBatch): its record goes ahead of the
// thread's next one, and the block back to its allocator only then. False when the batch takes
// no more (closed as the process ends): the caller writes the free itself.
bool DeferFree(ThreadState& t, Control& c, void* user, bool temporary, uint32_t tag) {
  alloc_channel::FreeBatch& b = *t.batch;
  ++t.busy;  // a signal handler's free meanwhile is written by itself, not into this entry
  std::atomic_signal_fence(std::memory_order_seq_cst);
  uint32_t n = b.count.load(std::memory_order_relaxed);
  bool taken = false;
  if (n < alloc_channel::kFreeBatchEntries) {  // neither full nor closed
    b.entries[n].store(reinterpret_cast<uintptr_t>(user) |
                           (temporary ? alloc_channel::kFreeEntryTemporary : 0) |
                           ((tag & kNextBlock) != 0 ? kEntryNextBlock : 0),
                       std::memory_order_relaxed);
    // Fails only when the process's end closed the batch meanwhile.
    taken = b.count.compare_exchange_strong(n, n + 1, std::memory_order_release,
                                            std::memory_order_relaxed);
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  --t.busy;
  if (taken && n + 1 == alloc_channel::kFreeBatchEntries) FlushFreeBatch(t, c);
  return taken;
}

// Counts the release of a block of ours before glibc may hand its address out again (so its free
// record precedes any new allocation at the same address in the ring). With `may_defer`, a
// sampled block's free may go into the thread's batch: then true, and the batch gives the block
// back to its allocator, not the caller.
NP_ALWAYS_INLINE bool CountRelease(void* user, const BlockHeader& h, bool may_defer = false) {
  if (NP_UNLIKELY((h.tag & kUncounted) != 0)) return false;
  Control* c = Channel();
  if (NP_UNLIKELY(c == nullptr)) return false;
  ThreadState& t = CurrentThread();
  bool temporary = false;
  if (NP_LIKELY(AllocatedHere(h.tag))) {
    temporary = CountFree(t, *c, user, h.size);
  } else {
    CountInheritedFree(t, *c, h.size);
  }
  if (NP_UNLIKELY((h.tag & kSampled) != 0)) {
    // Only plain blocks (their base is 16 bytes down, ReleaseBatchedBlock), 16-aligned (the
    // entry's low bits are flags), and not big.
    if (t.busy == 0 && may_defer && t.batch != nullptr && h.offset == kHeaderBytes &&
        (reinterpret_cast<uintptr_t>(user) & alloc_channel::kFreeEntryFlagMask) == 0 &&
        h.size <= kMaxBatchedBytes && DeferFree(t, *c, user, temporary, h.tag)) {
      return true;
    }
    if (t.busy == 0) {
      SampleFree(t, *c, user, temporary);
    } else {
      // A signal handler freeing a sampled block while its thread was inside the library, which
      // may hold the ring lock: the free cannot be written, and counts as lost.
      c->lost_samples.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return false;
}

// Allocate's rare cases: no channel, the program's own allocator, or a size that cannot be.
// The start of a new plain block (the header, then `size` bytes) from the process's allocator,
// with `*origin` its Track origin (kNextBlock for the program's own allocator, else 0); null when
// it cannot be had (errno ENOMEM).
void* NewPlainBase(size_t size, uint32_t* origin) {
  if (size > SIZE_MAX - kHeaderBytes) {
    errno = ENOMEM;
    return nullptr;
  }
  const bool next = BackendIsNext();
  *origin = next ? kNextBlock : 0;
  return next ? NextMalloc(size + kHeaderBytes) : __libc_malloc(size + kHeaderBytes);
}

__attribute__((noinline)) void* AllocateSlow(Control* c, size_t size, const void* hook_frame) {
  if (c == nullptr) return BackendIsNext() ? NextMalloc(size) : __libc_malloc(size);
  uint32_t origin = 0;
  void* base = NewPlainBase(size, &origin);
  return Track(c, base, size, kHeaderBytes, hook_frame, origin);
}

NP_ALWAYS_INLINE void* Allocate(size_t size, const void* frame) {
  Control* c = Channel();
  if (NP_UNLIKELY(c == nullptr || size > SIZE_MAX - kHeaderBytes || !BackendIsGlibc())) {
    return AllocateSlow(c, size, frame != kThisHooksFrame ? frame : __builtin_frame_address(0));
  }
  return Track(c, __libc_malloc(size + kHeaderBytes), size, kHeaderBytes, frame);
}

void* AllocateAligned(size_t alignment, size_t size, const void* frame) {
  if (alignment <= kHeaderBytes) return Allocate(size, frame);
  Control* c = Channel();
  const bool next = BackendIsNext();
  if (c == nullptr) return next ? NextMemalign(alignment, size) : __libc_memalign(alignment, size);
  if (size > SIZE_MAX - alignment) {
    errno = ENOMEM;
    return nullptr;
  }
  // The header sits in the alignment padding in front of the caller's pointer.
  void* base = next ? NextMemalign(alignment, size + alignment)
                    : __libc_memalign(alignment, size + alignment);
  return Track(c, base, size, alignment, frame, next ? kNextBlock : 0);
}

__attribute__((noinline)) void ReleaseSlow(void* user) {
  BlockHeader* h = HeaderOf(user);
  const BlockHeader copy = *h;
  h->tag = 0;  // a second free of this pointer is glibc's to diagnose, not ours to count again
  if (CountRelease(user, copy, /*may_defer=*/true)) return;
  FreeBase(static_cast<char*>(user) - BaseOffset(user, copy), copy.tag);
}

NP_ALWAYS_INLINE void Release(void* user) {
  if (NP_UNLIKELY(user == nullptr)) return;
  BlockHeader* h = HeaderOf(user);
  // The common case inline, with no call but glibc's (see Track), behind one comparison: a
  // counted, unsampled block this image allocated. A counted block was allocated with the
  // channel attached, which it stays: no need to look for it.
  const BlockHeader copy = *h;
  ThreadState& t = CurrentThread();
  if (NP_UNLIKELY(copy.tag != OwnTag() || !FreeNeedsNoMore(t, copy.size))) {
    if (!Ours(h)) {
      ForeignFree(user);
    } else {
      ReleaseSlow(user);
    }
    return;
  }
  h->tag = 0;
  (void)CountFreeBody(t, *t.slot, user, copy.size);
  __libc_free(static_cast<char*>(user) - copy.offset);
}

}  // namespace

void ReleaseBatchedBlock(uint64_t entry) {
  // Only blocks with the plain header are batched (CountRelease): the base is 16 bytes down.
  char* user = reinterpret_cast<char*>(entry & ~alloc_channel::kFreeEntryFlagMask);
  FreeBase(user - kHeaderBytes, (entry & kEntryNextBlock) != 0 ? kNextBlock : 0);
}

namespace {

// The definition of `name` after the preload's (glibc's), looked up once into `cache`; null when
// there is none.
template <typename Fn>
Fn NextDefinition(std::atomic<Fn>& cache, const char* name) {
  Fn fn = cache.load(std::memory_order_relaxed);
  if (fn != nullptr) return fn;
  ThreadState& t = CurrentThread();
  ++t.busy;  // dlsym may allocate
  fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  --t.busy;
  if (fn != nullptr) cache.store(fn, std::memory_order_relaxed);
  return fn;
}

// The malloc_usable_size of the allocator the hooks forward to: the one in the library that
// defines the __libc_malloc they call (glibc, or an allocator that stands in for it, as tcmalloc
// does). Not simply the next definition: a library preloaded after this one that replaces malloc
// without defining __libc_malloc (jemalloc) comes first, and its malloc_usable_size crashes on
// glibc's blocks.
using UsableSizeFn = size_t (*)(void*);
std::atomic<UsableSizeFn> g_usable_size{nullptr};

UsableSizeFn ResolveUsableSize() {
  UsableSizeFn fn = g_usable_size.load(std::memory_order_relaxed);
  if (fn != nullptr) return fn;
  ThreadState& t = CurrentThread();
  ++t.busy;  // the loader may allocate
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&__libc_malloc), &info) != 0 && info.dli_fname != nullptr) {
    if (void* lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD); lib != nullptr) {
      fn = reinterpret_cast<UsableSizeFn>(dlsym(lib, "malloc_usable_size"));
      dlclose(lib);
    }
  }
  --t.busy;
  if (fn == nullptr) return NextDefinition(g_usable_size, "malloc_usable_size");
  g_usable_size.store(fn, std::memory_order_relaxed);
  return fn;
}

size_t RealUsableSize(void* base) {
  const UsableSizeFn fn = ResolveUsableSize();
  return fn == nullptr ? 0 : fn(base);
}

using Wait4Fn = pid_t (*)(pid_t, int*, int, struct rusage*);
using WaitIdFn = int (*)(idtype_t, id_t, siginfo_t*, int);
std::atomic<Wait4Fn> g_wait4{nullptr};
std::atomic<WaitIdFn> g_waitid{nullptr};

// Looked up as the preload loads, not at the first call: that may be in a SIGCHLD handler, where
// dlsym (which takes the loader's lock and may allocate) must not run, or inside a hook.
__attribute__((constructor)) void ResolveForwardedCalls() {
  (void)NextDefinition(g_wait4, "wait4");
  (void)NextDefinition(g_waitid, "waitid");
  (void)ResolveUsableSize();
}

// A child killed by a signal ran none of the exit paths that take its heap out of the live heap
// (EndThisProcess); the wait call that reaps it tells its parent it is gone, so the parent does.
// Async-signal-safe, as the calls it stands for are.
pid_t Wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  const Wait4Fn fn = g_wait4.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  int got = 0;
  const pid_t reaped = fn(pid, &got, options, usage);
  if (reaped > 0) {
    if (WIFEXITED(got) || WIFSIGNALED(got)) EndReapedProcess(reaped);
    if (status != nullptr) *status = got;
  }
  return reaped;
}

int WaitId(idtype_t type, id_t id, siginfo_t* info, int options) {
  const WaitIdFn fn = g_waitid.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  siginfo_t got{};
  const int result = fn(type, id, &got, options);
  if (result == 0) {
    const bool reaped = (options & WEXITED) != 0 && (options & WNOWAIT) == 0 && got.si_pid > 0 &&
                        (got.si_code == CLD_EXITED || got.si_code == CLD_KILLED ||
                         got.si_code == CLD_DUMPED);
    if (reaped) EndReapedProcess(got.si_pid);
    if (info != nullptr) *info = got;
  }
  return result;
}

// The usable size of a block the preload did not allocate, as its allocator tells it.
size_t ForeignUsableSize(void* p) { return BackendIsNext() ? NextUsableSize(p) : RealUsableSize(p); }

size_t UsableSize(void* user) {
  if (user == nullptr) return 0;
  BlockHeader* h = HeaderOf(user);
  if (!Ours(h)) return ForeignUsableSize(user);
  const size_t offset = BaseOffset(user, *h);
  void* base = static_cast<char*>(user) - offset;
  const size_t usable = (h->tag & kNextBlock) != 0 ? NextUsableSize(base) : RealUsableSize(base);
  return usable > offset ? usable - offset : 0;
}

// Whether a sampled block goes to its allocator's own realloc (ResizeSampledBlock) rather than
// being moved by hand: a counted plain block of this image (not one a forked child inherited).
// Moving by hand copies the block at every growth where glibc would extend it in place or remap
// it: a Rust Vec grown to 64 MiB twenty times, whose large steps are all sampled, ran 1.55x
// slower under --alloc that way.
bool ResizesInPlaceOfHand(const BlockHeader& h, size_t size) {
  return (h.tag & (kSampled | kUncounted)) == kSampled && h.offset == kHeaderBytes &&
         Channel() != nullptr && AllocatedHere(h.tag) && size <= SIZE_MAX - kHeaderBytes &&
         CurrentThread().busy == 0;
}

// realloc of a sampled block by its allocator, which holds the ring lock meanwhile and writes
// the block's free in the same hold (ResizeWritingFree): the allocator may give the old address
// to another thread as soon as it has moved the block, and no record of a block there can come
// before this free. Then the release is counted and the new block counted (and perhaps sampled)
// as any other. When the allocator refuses (out of memory), nothing was written or counted: the
// block is where it was, as it was.
__attribute__((noinline)) void* ResizeSampledBlock(void* user, size_t size, const void* frame) {
  Control* c = Channel();
  ThreadState& t = CurrentThread();
  const BlockHeader old = *HeaderOf(user);
  const uint32_t origin = old.tag & kNextBlock;
  ResizeUnderLock resize{origin != 0 ? NextRealloc : __libc_realloc,
                         static_cast<char*>(user) - kHeaderBytes, size + kHeaderBytes};
  // The writer's system calls may set errno; a realloc that succeeded leaves the program's.
  const int saved_errno = errno;
  ++t.busy;
  void* base = ResizeWritingFree(t, *c, user, /*temporary=*/user == t.last_alloc, resize);
  --t.busy;
  if (base == nullptr) {
    errno = resize.refused_errno;
    return nullptr;
  }
  errno = saved_errno;
  (void)CountFree(t, *c, user, old.size);
  return Track(c, base, size, kHeaderBytes, frame, origin);
}

// Everything realloc does but the common case (see Reallocate).
__attribute__((noinline)) void* ReallocateSlow(void* user, size_t size, const void* frame) {
  if (user == nullptr) return Allocate(size, frame);
  if (size == 0) {  // glibc frees the block and returns NULL
    Release(user);
    return nullptr;
  }
  BlockHeader* h = HeaderOf(user);
  if (!Ours(h)) {
    // A block from before the channel: it becomes one of ours.
    void* moved = Allocate(size, frame);
    if (moved == nullptr) return nullptr;
    const size_t old_size = ForeignUsableSize(user);
    std::memcpy(moved, user, old_size < size ? old_size : size);
    ForeignFree(user);
    return moved;
  }
  if (const size_t usable = h->offset != kHeaderBytes ? UsableSize(user) : 0;
      size <= usable && usable - size <= std::max<size_t>(size, 4096)) {
    // An over-aligned block that fits (a shrink) stays where it is, as glibc leaves it, so it
    // keeps its alignment, which a program that shrinks a memalign'd buffer may rely on. glibc
    // also gives the tail back, which the header in front of the block does not let this do:
    // only a shrink that keeps at most as much as it uses (or a page) stays; a bigger one moves
    // (8 x 64 MiB shrunk to 64 B kept 514 MiB resident). Its release is counted (written, if
    // sampled) before its new allocation at the same address.
    const BlockHeader old = *h;
    const size_t offset = BaseOffset(user, old);
    CountRelease(user, old);
    return Track(Channel(), static_cast<char*>(user) - offset, size, offset, frame,
                 old.tag & kNextBlock);
  }
  if (ResizesInPlaceOfHand(*h, size)) return ResizeSampledBlock(user, size, frame);
  if (h->offset != kHeaderBytes || (h->tag & kSampled) != 0) {
    // An over-aligned block cannot grow in place with its header, and the sampled ones that
    // ResizesInPlaceOfHand leaves (a forked child's copy of its parent's block, a resize from
    // inside the library) are moved by hand so their free is in the ring before glibc can
    // reuse the address. The new block is allocated first, uncounted: a realloc that fails
    // leaves the old block allocated, so it must stay counted (it was counted as freed, and a
    // leak of it went unseen). Then the release is counted, then the new block: a realloc is a
    // move, never two blocks live at once (as heaptrack counts it).
    uint32_t origin = 0;
    void* base = NewPlainBase(size, &origin);
    if (base == nullptr) return nullptr;  // the old block is untouched and still counted
    const BlockHeader old = *h;
    CountRelease(user, old);
    h->tag = OwnTag(kUncounted | (old.tag & (kNextBlock | kFarBase)));
    void* moved = Track(Channel(), base, size, kHeaderBytes, frame, origin);
    std::memcpy(moved, user, old.size < size ? old.size : size);
    Release(user);
    return moved;
  }
  if (size > SIZE_MAX - kHeaderBytes) {
    errno = ENOMEM;
    return nullptr;
  }
  const BlockHeader old = *h;
  const uint32_t origin = old.tag & kNextBlock;
  void* old_base = static_cast<char*>(user) - kHeaderBytes;
  void* base = origin != 0 ? NextRealloc(old_base, size + kHeaderBytes)
                           : __libc_realloc(old_base, size + kHeaderBytes);
  if (base == nullptr) return nullptr;  // the old block is untouched and still counted
  CountRelease(user, old);
  return Track(Channel(), base, size, kHeaderBytes, frame, origin);
}

// The counting of a block glibc has resized when more than the bodies are due.
__attribute__((noinline)) void* CountReallocation(void* user, const BlockHeader& old, void* base,
                                                  size_t size, const void* frame) {
  CountRelease(user, old);
  return TrackSlow(base, size, kHeaderBytes, frame, 0);
}

// realloc's common case inline, as Track and Release are: a counted, unsampled block of ours
// resized by glibc, its release and the new allocation counted with no call but glibc's. A
// growing vector reallocs often, and the general path costs about twice this.
NP_ALWAYS_INLINE void* Reallocate(void* user, size_t size, const void* frame) {
  if (user == nullptr) return Allocate(size, frame);  // as common as a growth: a vector's first
  // Channel(), not a bare load: a forked child that has not registered yet does so before a
  // tag is read or a block marked with its own (the general path too relies on that).
  Control* c = Channel();
  if (NP_UNLIKELY(size == 0 || size > SIZE_MAX - kHeaderBytes || c == nullptr ||
                  !BackendIsGlibc())) {
    return ReallocateSlow(user, size, frame);
  }
  BlockHeader* h = HeaderOf(user);
  const BlockHeader old = *h;
  // Not a counted, unsampled block of this image with the plain header: the general path.
  if (NP_UNLIKELY(old.tag != OwnTag() || old.offset != kHeaderBytes)) {
    return ReallocateSlow(user, size, frame);
  }
  void* base = __libc_realloc(static_cast<char*>(user) - kHeaderBytes, size + kHeaderBytes);
  if (NP_UNLIKELY(base == nullptr)) return nullptr;  // the old block is untouched, still counted
  ThreadState& t = CurrentThread();
  if (NP_UNLIKELY(t.busy != 0 || !ReallocationNeedsNoMore(t, old.size, size))) {
    return CountReallocation(user, old, base, size, frame);
  }
  (void)CountFreeBody(t, *t.slot, user, old.size);
  char* moved = static_cast<char*>(base) + kHeaderBytes;
  BlockHeader* nh = HeaderOf(moved);
  nh->size = size;
  CountAllocationBody(t, *t.slot, moved, size);
  return moved;  // glibc kept the header's offset and tag with the block's contents
}

bool IsPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Whether the glibc the program runs on refuses an aligned_alloc alignment that is not a power
// of two (2.38 and later), asked once.
bool AlignedAllocRefusesOddAlignments() {
  static const bool refuses = [] {
    int major = 0, minor = 0;
    const char* v = gnu_get_libc_version();
    while (*v >= '0' && *v <= '9') major = major * 10 + (*v++ - '0');
    if (*v == '.') ++v;
    while (*v >= '0' && *v <= '9') minor = minor * 10 + (*v++ - '0');
    return major > 2 || (major == 2 && minor >= 38);
  }();
  return refuses;
}

size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace
}  // namespace nativeprof::preload

using nativeprof::preload::Allocate;
using nativeprof::preload::AllocateAligned;
using nativeprof::preload::Reallocate;

// Every exported function is its own frame (noinline, frame pointer kept, no sibling calls), so
// __builtin_frame_address(0) locates its caller's return address and stack.
#define NP_EXPORT extern "C" __attribute__((visibility("default"), noinline))

NP_EXPORT void* malloc(size_t size) {
  return Allocate(size, nativeprof::preload::kThisHooksFrame);
}

NP_EXPORT void free(void* ptr) { nativeprof::preload::Release(ptr); }

NP_EXPORT void* calloc(size_t n, size_t size) {
  size_t total = 0;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  using namespace nativeprof::preload;
  Control* c = Channel();
  const bool next = BackendIsNext();
  if (c == nullptr) return next ? NextCalloc(n, size) : __libc_calloc(n, size);
  if (total > SIZE_MAX - kHeaderBytes) {
    errno = ENOMEM;
    return nullptr;
  }
  if (NP_UNLIKELY(next)) {
    return Track(c, NextCalloc(1, total + kHeaderBytes), total, kHeaderBytes,
                 __builtin_frame_address(0), kNextBlock);
  }
  return Track(c, __libc_calloc(1, total + kHeaderBytes), total, kHeaderBytes, kThisHooksFrame);
}

NP_EXPORT void* realloc(void* ptr, size_t size) {
  return Reallocate(ptr, size, __builtin_frame_address(0));
}

NP_EXPORT void* reallocarray(void* ptr, size_t n, size_t size) {
  size_t total = 0;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Reallocate(ptr, total, __builtin_frame_address(0));
}

NP_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (!nativeprof::preload::IsPowerOfTwo(alignment) || alignment % sizeof(void*) != 0) {
    return EINVAL;
  }
  // As glibc's, a failure leaves ENOMEM in errno besides returning it.
  void* p = AllocateAligned(alignment, size, __builtin_frame_address(0));
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

NP_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (!nativeprof::preload::IsPowerOfTwo(alignment)) {
    // glibc before 2.38 (Debian 12 has 2.36) made aligned_alloc memalign, which takes any
    // alignment; 2.38 refuses one that is not a power of two.
    if (!nativeprof::preload::AlignedAllocRefusesOddAlignments()) return memalign(alignment, size);
    errno = EINVAL;
    return nullptr;
  }
  return AllocateAligned(alignment, size, __builtin_frame_address(0));
}

NP_EXPORT void* memalign(size_t alignment, size_t size) {
  // glibc rounds an alignment that is not a power of two up to one.
  size_t a = alignment < sizeof(void*) ? sizeof(void*) : alignment;
  if (!nativeprof::preload::IsPowerOfTwo(a)) {
    if (a > (SIZE_MAX >> 1) + 1) {
      errno = EINVAL;
      return nullptr;
    }
    a = size_t{1} << (64 - __builtin_clzll(a));
  }
  return AllocateAligned(a, size, __builtin_frame_address(0));
}

NP_EXPORT void* valloc(size_t size) {
  return AllocateAligned(nativeprof::preload::PageSize(), size, __builtin_frame_address(0));
}

NP_EXPORT void* pvalloc(size_t size) {
  const size_t page = nativeprof::preload::PageSize();
  size_t rounded = 0;
  if (__builtin_add_overflow(size, page - 1, &rounded)) {
    errno = ENOMEM;
    return nullptr;
  }
  rounded &= ~(page - 1);
  return AllocateAligned(page, rounded == 0 ? page : rounded, __builtin_frame_address(0));
}

NP_EXPORT size_t malloc_usable_size(void* ptr) { return nativeprof::preload::UsableSize(ptr); }

// _exit and _Exit end the process without the destructor that publishes the calling thread's
// last live-heap change (up to 4 KiB of a rise, which may be the peak) and takes the process's
// heap out of the live heap: do both, then exit as glibc's _exit does. glibc's own exit path
// calls its internal _exit, not these.
NP_EXPORT __attribute__((noreturn)) void _exit(int status) {
  nativeprof::preload::EndThisProcess();
  for (;;) ::syscall(SYS_exit_group, status);
}

NP_EXPORT __attribute__((noreturn)) void _Exit(int status) noexcept { _exit(status); }

// prctl, to see a thread forbid itself the TSC (record_clock.h), after which the preload's clock
// no longer reads it. Forwarded as glibc forwards it: four more arguments, whether passed or
// not, to the system call.
NP_EXPORT int prctl(int option, ...) {
  va_list args;
  va_start(args, option);
  const unsigned long arg2 = va_arg(args, unsigned long);
  const unsigned long arg3 = va_arg(args, unsigned long);
  const unsigned long arg4 = va_arg(args, unsigned long);
  const unsigned long arg5 = va_arg(args, unsigned long);
  va_end(args);
  // As the kernel reads it: an int (the caller passed one; the upper half is undefined).
  if (option == PR_SET_TSC && static_cast<unsigned int>(arg2) == PR_TSC_SIGSEGV) {
    // Before the call: a record written between the call and the flag would read the TSC.
    nativeprof::preload::g_tsc_forbidden.store(true, std::memory_order_relaxed);
  }
  return static_cast<int>(::syscall(SYS_prctl, option, arg2, arg3, arg4, arg5));
}

// The wait calls, so a child reaped by its parent leaves the live heap however it ended
// (Wait4). glibc's system() reaps its shell through an internal call these do not see; nativeprof
// ends such a process at its exit record (AllocChannel::OnProcessExited).
NP_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  return nativeprof::preload::Wait4(pid, status, options, usage);
}
NP_EXPORT pid_t wait3(int* status, int options, struct rusage* usage) {
  return nativeprof::preload::Wait4(-1, status, options, usage);
}
NP_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  return nativeprof::preload::Wait4(pid, status, options, nullptr);
}
NP_EXPORT pid_t wait(int* status) { return nativeprof::preload::Wait4(-1, status, 0, nullptr); }
NP_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  return nativeprof::preload::WaitId(type, id, info, options);
}
