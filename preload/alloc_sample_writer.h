// Inside the profiled process: writes a sampled allocation (the caller's registers and a copy of
// its stack, to be unwound by the profiler's DWARF pipeline, not here) or the free of a sampled
// block into the channel's ring as a PERF_RECORD_SAMPLE in the session's own sample layout.
// Writers of every profiled process serialize on the channel's ring lock and take the record's
// time under it, so the ring is in time order like a kernel CPU ring. A full ring makes the
// writer wait for the profiler (up to kMaxWaitNs, then the sample is dropped and counted), so
// samples are not lost to a drain thread that is merely behind.
#ifndef NATIVEPROF_PRELOAD_ALLOC_SAMPLE_WRITER_H_
#define NATIVEPROF_PRELOAD_ALLOC_SAMPLE_WRITER_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "preload/alloc_accounting.h"
#include "sampler/alloc_channel_layout.h"

namespace nativeprof::preload {

inline constexpr uint64_t kMaxWaitNs = 2'000'000'000;
// How often a waiting writer checks that the profiler still exists.
inline constexpr uint64_t kReaderCheckNs = 10'000'000;

// False when the channel's sample layout has fields the preload cannot write (the profiler never
// asks for those); sampling is then off and only the totals are counted.
bool SampleLayoutSupported(const alloc_channel::Control& c);

// Returns false if the sample was dropped (then the block must not be marked as sampled).
bool WriteAllocSample(ThreadState& t, alloc_channel::Control& c, CallSite site, const void* user,
                      size_t size);
// Frees what the thread keeps of its last stack copy; its later samples (a TLS destructor's
// allocations) are sent whole.
void ReleaseStackCopy(ThreadState& t);
// Marks the moment the run's live heap reached a new peak of `peak_bytes`
// (alloc_channel::kFreeRecordPeak).
void WritePeakMark(ThreadState& t, alloc_channel::Control& c, int64_t peak_bytes);
void WriteFreeSample(ThreadState& t, alloc_channel::Control& c, const void* user, bool temporary);

// The allocator's realloc of a sampled block, run by ResizeWritingFree with the ring lock held.
struct ResizeUnderLock {
  void* (*realloc_fn)(void*, size_t);
  void* base;    // the allocator's block
  size_t bytes;  // its new size
  void* result = nullptr;
  bool ran = false;
  int refused_errno = 0;  // errno as the allocator left it when it refused

  bool Run() {
    ran = true;
    result = realloc_fn(base, bytes);
    if (result == nullptr) refused_errno = errno;
    return result != nullptr;
  }
};
// Resizes sampled block `user` with `resize` and, when the allocator did, writes the block's free
// (`temporary` as CountFree will find it) in the same hold of the ring lock: the allocator may
// hand the old address to another thread as soon as it has moved the block, and that thread's
// record of a block there cannot come before this free. A refused resize writes nothing (the
// block is live, as it was). Returns the allocator's result.
void* ResizeWritingFree(ThreadState& t, alloc_channel::Control& c, const void* user,
                        bool temporary, ResizeUnderLock& resize);

// The thread's batched frees (alloc_channel::FreeBatch) into the ring now, as one record, and
// their blocks back to their allocator (ReleaseBatchedBlock). Each record the thread writes
// carries its batch ahead of it the same way. With `close` (the process is ending), the batch
// takes no more frees and its blocks stay as they are.
void FlushFreeBatch(ThreadState& t, alloc_channel::Control& c, bool close = false);
// Writes and closes another thread's batch as its process ends, or one an image exec'd over
// left: their threads will not write them (their blocks die with the process).
void CloseLeftBatch(alloc_channel::Control& c, alloc_channel::FreeBatch& batch);
// Gives a block whose free was batched back to its allocator: an entry of a FreeBatch
// (alloc_hooks.cc, which knows the block's header).
void ReleaseBatchedBlock(uint64_t entry);

}  // namespace nativeprof::preload

#endif  // NATIVEPROF_PRELOAD_ALLOC_SAMPLE_WRITER_H_
