// The memory shared between `record --alloc` and the allocation preload library in every process
// it profiles: one file (in /dev/shm) that the profiler creates and fills with its sampling format
// before the command execs, and that each process's preload maps at start-up. It holds
//   - the exact totals, counted on every call into one slot per thread (each slot is written by
//     its thread only, with plain stores, so counting costs no atomic read-modify-write), plus
//     the global live heap and its peak;
//   - a ring with the layout of a perf mmap ring (a perf_event_mmap_page, then a power-of-two
//     data area) into which the preload writes PERF_RECORD_SAMPLE records of sampled
//     allocations, in the session's own sample layout, and FreeRecords of their frees, so the
//     profiler reads them with its RingBuffer and time-merges them with the kernel's rings like
//     any other.
// Header only and free of dependencies: the preload (which runs inside the target and may not use
// the profiler's libraries) includes it too. Every field is read and written through lock-free
// atomics, which are address-free, so they work across processes.
#ifndef NATIVEPROF_SAMPLER_ALLOC_CHANNEL_LAYOUT_H_
#define NATIVEPROF_SAMPLER_ALLOC_CHANNEL_LAYOUT_H_

#include <linux/perf_event.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace nativeprof::alloc_channel {

// The environment variable that names the channel file for the preload.
inline constexpr char kEnvChannel[] = "NATIVEPROF_ALLOC_CHANNEL";
inline constexpr uint64_t kMagic = 0x6e70616c6c6f6331ull;  // "npalloc1"
inline constexpr uint32_t kVersion = 13;  // bumped with every change to Control or a record

// Identifiers (PERF_SAMPLE_IDENTIFIER) of the preload's records. The kernel numbers its events
// from 1 up; these cannot collide.
inline constexpr uint64_t kAllocSampleId = ~uint64_t{0};
inline constexpr uint64_t kFreeSampleId = ~uint64_t{0} - 1;
// A sampled allocation whose stack copy is sent as its difference from the copy in the same
// thread's previous allocation record (of the same pid and tid, earlier in the ring), which
// under --alloc=1 is nearly all of it: a call site's callers sit at the same addresses with the
// same return addresses, and only a few locals change. Its PERF_SAMPLE_STACK_USER field is
// perf's shape (size, data[size], dyn_size == size), but its data is a stack delta, and its
// PERF_SAMPLE_REGS_USER is PERF_SAMPLE_REGS_ABI_NONE: the delta carries the three registers the
// preload has (the session's other ones are 0 in a whole record).
inline constexpr uint64_t kAllocDeltaSampleId = ~uint64_t{0} - 2;

// The data of a kAllocDeltaSampleId record's stack field: a u64 with the copy's byte count (a
// multiple of 8) in its low half and the delta's sequence number in its high half (1 for the
// first delta after a whole record of the thread, then 2, ...: a gap means a record went
// missing), then the caller's bp, sp and ip (kDeltaHeaderWords in all), then runs, each a
// StackRun and its `words` u64 values for the copy's words [word, word + words). Every word of
// the copy not in a run is the previous copy's word at the same address, which the writer only
// leaves out where that copy covered it.
inline constexpr size_t kDeltaHeaderWords = 4;
// A thread's every kMaxDeltas + 1st allocation record is whole, so a difference the profiler
// got wrong cannot last.
inline constexpr uint32_t kMaxDeltas = 255;
struct StackRun {
  uint32_t word;   // index of the run's first word, counted from sp
  uint32_t words;
};
static_assert(sizeof(StackRun) == 8);

// Bits of a free's SampleView::period (a free has no period of its own).
inline constexpr uint64_t kFreeTemporary = 1;  // freed before its thread did anything else

// A free of a sampled block. Not a PERF_RECORD_SAMPLE: in the session's layout that is 88 bytes
// of ten fields a free has no use for, and under --alloc=1 every other record is a free. The
// profiler's parser hands it on as a sample with id kFreeSampleId (the period kFreeTemporary
// when header.misc has kFreeRecordTemporary), so only the parser and the time merge know it.
inline constexpr uint32_t kFreeRecordType = 0x4e46;  // far above the kernel's types and perf's
                                                     // own (PERF_RECORD_USER_TYPE_START, 64)
inline constexpr uint16_t kFreeRecordTemporary = 1;
// Not a free: the run's live heap (Control::live_bytes) reached a new peak, of `addr` bytes,
// at least kPeakMarkStep above the last one marked. Written only while sampling by bytes
// (rate > 1): the profiler then copies the sampled live set per site at the last mark, the
// moment of the exact peak. The highest point of the sampled estimate itself is a poor choice
// there: the maximum of a noisy series sits on its noise (2.4-2.9x the exact peak for a
// program of a 2 MB peak at the default rate). The parser hands it on with id kPeakMarkSampleId.
inline constexpr uint16_t kFreeRecordPeak = 2;
inline constexpr uint64_t kPeakMarkSampleId = ~uint64_t{0} - 3;
// A new peak is marked when it exceeds the last mark by 1/kPeakMarkStep of it: at most ~1,800
// marks over a growth from 4 KiB to 4 GB.
inline constexpr int64_t kPeakMarkStep = 128;
// Frees batched by their thread (FreeBatch), written as one record: `addr` and the u64s that
// follow it to header.size are the frees, each an avma with kFreeEntryTemporary in its low bit
// for a temporary allocation (blocks are 16-aligned: the low 4 bits are the writer's), all at
// `time_ns`, the time the batch was written, no earlier than any of them.
inline constexpr uint16_t kFreeRecordBatch = 4;
inline constexpr uint64_t kFreeEntryTemporary = 1;
inline constexpr uint64_t kFreeEntryFlagMask = 0xf;
struct FreeRecord {
  perf_event_header header;  // kFreeRecordType, misc, sizeof(FreeRecord) (more for a batch)
  uint64_t time_ns;          // the clock of the session's records
  uint32_t pid;
  uint32_t tid;
  uint64_t addr;             // the block's avma
};
static_assert(sizeof(FreeRecord) == 32);

// Under --alloc=1 (every allocation sampled, every free a record), a thread's frees of sampled
// blocks wait here, up to kFreeBatchEntries, and go into the ring as one record (a FreeRecord
// with kFreeRecordBatch) ahead of the thread's next record, under the same lock and time, or
// when the batch is full, the thread exits or forks, or the process ends. Their blocks are given
// back to the allocator only then, so no address in a batch can be handed out again before its
// free is in the ring. Kept in the channel, not the thread's own memory: a process ending by
// exit() writes its other threads' batches, and an image exec'd over one writes the batches its
// threads left (its pid, another image) as it attaches, before any record of its own. Entries
// are avmas with kFreeEntryFlagMask bits of the writer's (kFreeEntryTemporary, and the
// allocator the block goes back to).
// The owner appends with a compare-and-swap of `count`; the frees are taken out (count reset, or
// set to kFreeBatchClosed as the process ends, after which its thread writes its frees one by
// one) under the ring lock, or by the profiler once no writer can take them (TakeFreeBatch).
inline constexpr size_t kFreeBatchEntries = 32;
inline constexpr uint32_t kFreeBatchClosed = 1u << 31;
struct alignas(64) FreeBatch {
  std::atomic<uint32_t> count;  // entries held, or kFreeBatchClosed
  std::atomic<uint32_t> pid;
  std::atomic<uint32_t> tid;
  std::atomic<uint32_t> image;  // the image's number (Control::images) that claimed it
  std::atomic<uint64_t> entries[kFreeBatchEntries];
};

// Takes the frees out of `b` into `out` (room for kFreeBatchEntries) and returns how many. With
// `close` the batch takes no more: its thread writes its later frees one by one. Without, only
// by its owner under the ring lock (it appends without the lock). Of two takers that race (an
// owner and a closer that does not hold the lock: the profiler once the process is gone, or
// stopped), only one gets the frees: closing is an exchange, and the owner's reset a
// compare-and-swap that fails once the batch was closed.
inline uint32_t TakeFreeBatch(FreeBatch& b, bool close, uint64_t* out) {
  uint32_t state = close ? b.count.exchange(kFreeBatchClosed, std::memory_order_acq_rel)
                         : b.count.load(std::memory_order_acquire);
  if ((state & kFreeBatchClosed) != 0) return 0;  // taken and closed before
  const uint32_t n = state < kFreeBatchEntries ? state : uint32_t{kFreeBatchEntries};
  for (uint32_t i = 0; i < n; ++i) out[i] = b.entries[i].load(std::memory_order_relaxed);
  if (!close && n != 0 &&
      !b.count.compare_exchange_strong(state, 0, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
    return 0;  // closed meanwhile: the closer has them
  }
  return n;
}

// One thread's exact counts. Written only by the thread that claimed it (relaxed load + store),
// read by the profiler at any time; totals are sums over every slot.
struct alignas(64) ThreadSlot {
  std::atomic<uint64_t> alloc_calls;
  std::atomic<uint64_t> alloc_bytes;   // requested bytes
  std::atomic<uint64_t> free_calls;    // frees of non-null pointers allocated while profiled
  std::atomic<uint64_t> freed_bytes;
  std::atomic<uint64_t> temporary;     // allocations freed before their thread did anything else
  std::atomic<uint64_t> sampled;       // allocations written to the ring
  // Frees by a forked child of its copies of blocks an earlier image allocated: in none of the
  // above, so the totals count each block once (the image that allocated it may free it too).
  std::atomic<uint64_t> inherited_frees;
  std::atomic<uint64_t> inherited_freed_bytes;
};

inline constexpr size_t kThreadSlots = 8192;
inline constexpr size_t kPidSlots = 4096;

// The profiler's feedback on how much stack a thread's samples need. Once a thread's sampled
// stack has been unwound to its outermost frame (_start, or the thread's start routine, whose
// place on the stack never changes), everything above `stack_high` is of no use to the
// unwinder: the preload then copies [sp, stack_high) instead of the whole stack_user_bytes.
// For the main thread that leaves out the environment, auxv and the random gap above _start,
// nearly 8 KiB. Written by the profiler (`stack_high` first, then `tid` with release), read by
// the preload (tid with acquire, then stack_high); open addressing by tid, kHintProbes probes.
// A truncated unwind resets the hint to 0 (copy everything) until the next complete one.
struct StackHint {
  std::atomic<uint32_t> tid;         // 0 = free
  std::atomic<uint64_t> stack_high;  // 0 = no hint
};
inline constexpr size_t kHintSlots = 8192;
inline constexpr size_t kHintProbes = 16;
inline constexpr size_t HintSlot(uint32_t tid, size_t probe) {
  return (tid * size_t{2654435761u} + probe) % kHintSlots;
}

struct alignas(64) Control {
  // Written by the profiler before the target starts; read-only afterwards.
  uint64_t magic;
  uint32_t version;
  uint32_t stack_user_bytes;          // bytes of stack each sample copies (attr.sample_stack_user)
  uint64_t sample_type;               // the session's attr.sample_type
  uint64_t sample_regs_user;          // the session's attr.sample_regs_user
  uint64_t rate_bytes;                // mean bytes between samples; 1 = every allocation
  uint64_t ring_offset;               // file offset of the ring's perf_event_mmap_page
  uint64_t ring_data_bytes;           // size of the data area that follows it (a power of two)
  // 1: the kernel's CLOCK_MONOTONIC runs at the TSC's rate (clocksource "tsc", or kvm-clock over
  // an invariant TSC: RecordClockMayUseTsc), so the preload may extrapolate record times from it
  // (preload/record_clock.h).
  uint32_t tsc_clock;
  char wake_path[256];                // a FIFO the preload writes a byte to when the ring fills
  // The profiler's pid: a writer that waits for room checks that it still exists, so a profiler
  // killed outright (no reader_gone) does not keep every later record waiting.
  uint32_t reader_pid;

  // Shared state.
  alignas(64) std::atomic<uint32_t> ring_lock;  // 0 free, else the holder's pid: serializes
                                                // ring writers
  // Progress of the lock's holders, for waiters to tell a holder that will never unlock (killed,
  // cancelled, stopped by a debugger) from a busy one: `ring_lock_epoch` counts the times the
  // lock was taken, `ring_lock_beat` the holder's rounds of waiting for room.
  std::atomic<uint32_t> ring_lock_epoch;
  std::atomic<uint32_t> ring_lock_beat;
  std::atomic<uint32_t> wake_pending;  // a wake byte is in the FIFO and not yet read
  std::atomic<uint32_t> reader_gone;   // the profiler stopped reading: writers drop samples
  std::atomic<uint32_t> processes;     // distinct processes whose preload attached
  std::atomic<uint64_t> lost_samples;  // samples dropped (ring full for too long, or no reader)
  std::atomic<uint32_t> slots_claimed; // next free slot index (may exceed kThreadSlots)
  // Process images (attaches and forked children) so far: each tags the blocks it allocates with
  // its number (mod 2^16), which tells a free of its own block from one of an inherited copy.
  std::atomic<uint32_t> images;
  // The record clock (preload/record_clock.h), written by the writer holding ring_lock: the TSC
  // and CLOCK_MONOTONIC at the last reading that calibrated it (0: none yet), ns per TSC tick
  // as a 32.32 fixed-point number (0: not measured yet), and the latest time written.
  std::atomic<uint64_t> clock_tsc;
  std::atomic<uint64_t> clock_ns;
  std::atomic<uint64_t> clock_mult;
  std::atomic<uint64_t> last_time_ns;
  alignas(64) std::atomic<int64_t> live_bytes;   // flushed per-thread deltas (see the preload)
  std::atomic<int64_t> peak_bytes;               // the most live_bytes has been
  // What images replaced by an exec left live (as published): counted in the totals' allocated
  // bytes, never freed, and no longer held by anyone.
  std::atomic<int64_t> exec_left_bytes;
  std::atomic<int64_t> peak_marked_bytes;        // the peak of the last kFreeRecordPeak record
  // The pids counted in `processes` (open addressing; 0 = empty), so a forked child that then
  // execs, and attaches again, counts once.
  std::atomic<uint32_t> pids[kPidSlots];
  // Each of those processes' own live heap and its peak (pid_live[i] is pids[i]'s), published
  // by its threads as live_bytes is. A pid the table has no room for counts only in the totals;
  // an exec'd image continues its pid's figures (what the old image left live stays counted).
  alignas(64) std::atomic<int64_t> pid_live[kPidSlots];
  std::atomic<int64_t> pid_peak[kPidSlots];
  // 1 once the process has ended (exit, _exit) and its pid_live left live_bytes: what it
  // publishes after that goes to its own figures only, and a later process with the same pid
  // (pids wrap) must not take it out again.
  std::atomic<uint8_t> pid_ended[kPidSlots];
  // When pids[i]'s current image attached (CLOCK_MONOTONIC ns; the preload attaches as it
  // loads). An image started by an exec later than this never attached: it is static, setuid,
  // runs as a user who cannot open the channel, or had LD_PRELOAD cleared, and its allocations
  // are not counted.
  alignas(64) std::atomic<uint64_t> pid_attach_ns[kPidSlots];
  // 1 when pids[i]'s current image calls a malloc that is not the library's: the program defines
  // it itself (a statically linked jemalloc, as Rust's compiler has), or an earlier LD_PRELOAD
  // library does. Its allocations do not reach the hooks, and are not counted.
  std::atomic<uint8_t> pid_malloc_elsewhere[kPidSlots];
  alignas(64) StackHint hints[kHintSlots];
  alignas(64) ThreadSlot overflow;     // shared by threads past kThreadSlots (atomic adds)
  ThreadSlot slots[kThreadSlots];
  FreeBatch free_batches[kThreadSlots];  // free_batches[i] is slots[i]'s thread's (--alloc=1)
};

// How many of `slots` (and of `free_batches`) threads have claimed so far.
inline uint32_t ClaimedSlots(const Control& c) {
  const uint32_t claimed = c.slots_claimed.load(std::memory_order_acquire);
  return claimed < kThreadSlots ? claimed : static_cast<uint32_t>(kThreadSlots);
}

// The pid slot of process `pid` (the index of `pids` it registered in), or -1 when it has none.
// Registration takes the first empty slot probing from pid % kPidSlots, and no slot is ever
// emptied, so an empty slot ends the search.
inline int FindPidSlot(const Control& c, uint32_t pid) {
  if (pid == 0) return -1;
  for (size_t i = 0; i < kPidSlots; ++i) {
    const size_t index = (pid + i) % kPidSlots;
    const uint32_t seen = c.pids[index].load(std::memory_order_relaxed);
    if (seen == pid) return static_cast<int>(index);
    if (seen == 0) return -1;
  }
  return -1;
}

// Takes the heap of the process in pid slot `index` out of the run's live heap, once: by the
// process at its end, by its parent when it reaps it, or by the profiler when it sees the process
// gone without either. What the process never freed stays in the leaked totals. True when this
// call ended it (so the process did not: it left the frees its threads batched unwritten).
inline bool EndPidSlot(Control& c, size_t index) {
  // The flag first: a thread publishing meanwhile either sees it (and leaves live_bytes alone)
  // or has added its change to pid_live as well by the time it is read below.
  if (c.pid_ended[index].exchange(1, std::memory_order_acq_rel) != 0) return false;
  c.live_bytes.fetch_sub(c.pid_live[index].load(std::memory_order_acquire),
                         std::memory_order_acq_rel);
  return true;
}

// The ring starts on the first page boundary after the control block.
inline constexpr size_t RingOffset(size_t page_size) {
  return (sizeof(Control) + page_size - 1) / page_size * page_size;
}

}  // namespace nativeprof::alloc_channel

#endif  // NATIVEPROF_SAMPLER_ALLOC_CHANNEL_LAYOUT_H_
