// The profiler's end of the allocation channel (alloc_channel_layout.h): creates the shared file
// and the wake FIFO that `record --alloc` names to the preload through NATIVEPROF_ALLOC_CHANNEL,
// writes the session's sample layout into it before the command execs, reads the preload's ring
// (as one more time-ordered ring of the Session) and the exact totals, and removes both files when
// destroyed. Drain thread only, apart from the read-only Totals().
#ifndef NATIVEPROF_SAMPLER_ALLOC_CHANNEL_H_
#define NATIVEPROF_SAMPLER_ALLOC_CHANNEL_H_

#include <linux/perf_event.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/scoped_fd.h"
#include "sampler/alloc_channel_layout.h"
#include "sampler/ring_buffer.h"

namespace nativeprof::sampler {

// One profiled process's own live heap: its peak, and what was live when it was read.
struct ProcessHeap {
  uint32_t pid = 0;
  uint64_t peak_bytes = 0;
  int64_t live_bytes = 0;
  // Its (last image's) malloc is not the library's (alloc_channel::Control::
  // pid_malloc_elsewhere): its allocations were not counted.
  bool malloc_elsewhere = false;
};

// The exact figures, summed over every thread of every profiled process.
struct AllocTotals {
  uint64_t alloc_calls = 0;
  uint64_t alloc_bytes = 0;   // requested
  uint64_t free_calls = 0;
  uint64_t freed_bytes = 0;
  uint64_t temporary = 0;
  uint64_t sampled = 0;       // allocations written to the ring
  // Frees by forked children of their copies of blocks an earlier image allocated: not in the
  // figures above (each block is counted where it was allocated).
  uint64_t inherited_frees = 0;
  uint64_t inherited_freed_bytes = 0;
  uint64_t lost_samples = 0;  // samples the preload dropped (ring full for 2 s)
  uint64_t processes = 0;     // processes whose preload attached
  uint64_t peak_bytes = 0;    // most bytes live at once (exact for one thread; see the preload)
  uint64_t live_bytes() const { return alloc_bytes > freed_bytes ? alloc_bytes - freed_bytes : 0; }
  uint64_t live_blocks() const { return alloc_calls > free_calls ? alloc_calls - free_calls : 0; }
  // False when the run freed more than it allocated. Inherited frees are kept apart, so only a
  // child forked by a raw fork system call (no pthread_atfork handler: its parent's image number)
  // can still make it so.
  bool leak_known() const { return freed_bytes <= alloc_bytes && free_calls <= alloc_calls; }
};

// A free of a sampled block that the preload batched under --alloc=1 (alloc_channel::FreeBatch)
// and never wrote into the ring: its thread was killed, or still ran when recording stopped.
struct BatchedFree {
  uint32_t pid = 0;
  uint64_t block_avma = 0;
  bool temporary = false;
};

// Whether the preload may extrapolate its record times (CLOCK_MONOTONIC) from the TSC between
// readings of the clock (Control::tsc_clock), given the kernel's current clocksource and
// /proc/cpuinfo's text for one processor.
bool RecordClockMayUseTsc(absl::string_view clocksource, absl::string_view cpuinfo);

// Removes the channel files in `dir` of profilers that no longer exist (killed before they
// could remove their own). Called by AllocChannel::Create.
void RemoveStaleChannels(const std::string& dir);

class AllocChannel {
 public:
  // Creates `<dir>/nativeprof-alloc-<pid>-<n>` (mode 0600) with a ring of `ring_data_bytes` (a
  // power of two) and its FIFO. `rate_bytes`: mean bytes between samples, 1 = every allocation.
  static absl::StatusOr<AllocChannel> Create(const std::string& dir, uint64_t rate_bytes,
                                             size_t ring_data_bytes);
  AllocChannel(AllocChannel&&) noexcept;
  AllocChannel& operator=(AllocChannel&&) = delete;
  ~AllocChannel();

  // The value of NATIVEPROF_ALLOC_CHANNEL for the command.
  const std::string& path() const { return path_; }
  uint64_t rate_bytes() const { return control()->rate_bytes; }

  // Tells the preload the session's layout; before the command execs.
  void Configure(const perf_event_attr& attr);
  // A reader of the preload's ring, for the Session. Valid while this channel lives.
  RingBuffer Ring() const;
  // Readable when the preload wants its ring drained (it filled a quarter of it).
  int wake_fd() const { return fifo_.get(); }
  // After each drain: empties the FIFO, re-arms the preload's wakeup and notes the live heap
  // (at most once per interval, and always after the `last` one).
  void AfterDrain(bool last = false);
  // Tells the preload that thread `tid`'s sampled stacks need no bytes at or above
  // `stack_high` (an avma; 0 forgets the hint: copy the whole stack_user_bytes again).
  void SetStackHint(uint32_t tid, uint64_t stack_high);
  // Process `pid`'s main thread exited (its exit record). If the process is gone without having
  // taken its heap out of the live heap (killed by a signal and reaped where no wait call the
  // preload sees returned it: SIGCHLD ignored, init, glibc's system()), takes it out, as the
  // preload would have, and returns the frees its threads had batched and not written, which
  // only its exit() would have.
  std::vector<BatchedFree> OnProcessExited(uint32_t pid);
  // Before the last drain: writers stop waiting for room and drop samples from now on (the
  // profiler is going away), and write nothing once a record being written now is in. Returns
  // the frees batched and not written, by every thread (a process still running, or one killed
  // whose exit is in that drain); their threads write their later frees one by one, which are
  // dropped.
  std::vector<BatchedFree> StopWriting();

  AllocTotals Totals() const;
  // Each profiled process's own heap, the largest peak first (AllocTotals::peak_bytes is of all
  // of them together).
  std::vector<ProcessHeap> ProcessHeaps() const;
  // Whether the image process `pid` started with an exec at `exec_ns` (CLOCK_MONOTONIC) loaded
  // the preload and attached; nullopt when the channel cannot tell (its pid table is full).
  std::optional<bool> ImageAttached(uint32_t pid, uint64_t exec_ns) const;
  // (CLOCK_MONOTONIC ns, live bytes) as of each drain, at most one point per interval; the
  // interval doubles whenever the series would pass kMaxPoints, so a long run keeps a bounded,
  // evenly spaced series. The live bytes are the figure the peak is of: the heap of the processes
  // still running (an ended process's heap is leaked, not live), as the threads published it.
  const std::vector<std::pair<uint64_t, uint64_t>>& live_over_time() const { return series_; }
  static constexpr size_t kMaxPoints = 4096;

 private:
  AllocChannel() = default;
  alloc_channel::Control* control() const {
    return static_cast<alloc_channel::Control*>(map_.get());
  }
  // Closes the batches `pred` picks and returns their frees.
  template <typename Pred>
  std::vector<BatchedFree> CloseBatches(Pred pred);
  // How long StopWriting waits for a writer to let go of the ring lock (one that is alive).
  static constexpr std::chrono::milliseconds kStopWaitLimit{500};

  std::string path_;
  std::string fifo_path_;
  ScopedMmap map_;
  ScopedFd fifo_;
  ScopedFd fifo_writer_;
  std::vector<std::pair<uint64_t, uint64_t>> series_;
  uint64_t series_interval_ns_ = 10'000'000;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_ALLOC_CHANNEL_H_
