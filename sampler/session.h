// A sampling session: one perf event per (target task, online CPU), one ring buffer per CPU (events
// on the same CPU share it through PERF_EVENT_IOC_SET_OUTPUT; the kernel refuses to mmap an
// inherited per-task event with cpu = -1, which is why rings are per CPU), and a drain that hands
// records to a RecordSink in time order across CPUs. Falls back to cpu-clock when the requested
// hardware event is unsupported and to user-only sampling when kernel sampling is not permitted,
// recording a one-line note for each. Owned and used by one thread (the drain thread).
#ifndef NATIVEPROF_SAMPLER_SESSION_H_
#define NATIVEPROF_SAMPLER_SESSION_H_

#include <poll.h>
#include <sys/types.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "sampler/alloc_channel.h"
#include "sampler/alloc_stack_decoder.h"
#include "sampler/perf_event.h"
#include "sampler/record_parser.h"
#include "sampler/record_sorter.h"
#include "sampler/records.h"
#include "sampler/ring_buffer.h"

namespace nativeprof::sampler {

struct SessionOptions {
  SamplingAttrOptions sampling;
  // Tasks to open events on. For `record -- CMD` this is the forked child (inherit follows its
  // threads and children); for attaching, every existing thread.
  std::vector<pid_t> targets;
  // Data pages per CPU ring, a power of two; 0 picks DefaultRingPages().
  size_t ring_pages = 0;
  // --alloc: the preload's channel, read as one more ring (its samples come as SampleEvent::kAlloc
  // and kFree). Must outlive the session; sampling.alloc must be set with it.
  AllocChannel* alloc_channel = nullptr;
  // Testing seam; null = the real syscall. Tests refuse on purpose to walk the fallback ladder.
  PerfEventOpenFn open_fn;
};

struct SessionStats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t corrupt_batches = 0;  // ring batches skipped because a header was impossible
  uint64_t parse_errors = 0;     // records shorter than their fields (kDataLoss)
  uint64_t peak_held_bytes = 0;  // most record bytes the sorter held back at once
  uint64_t undecodable_alloc_stacks = 0;  // --alloc delta records with no copy to apply to
};

class Session {
 public:
  // Opens the events and maps the rings. Errors: those of OpenPerfEvent / RingBuffer::Map, with
  // messages that say what to do; kInvalidArgument for an empty target list.
  static absl::StatusOr<std::unique_ptr<Session>> Open(const SessionOptions& options);

  // The event actually sampled (cpu-clock after a fallback).
  const EventSpec& event() const { return event_; }
  // One line per fallback taken while opening ("cycles not supported here; sampling cpu-clock").
  const std::vector<std::string>& notes() const { return notes_; }
  bool kernel_sampled() const { return kernel_sampled_; }
  // --off-cpu: context switches are sampled too (their samples come as SampleEvent::kContextSwitch).
  bool off_cpu() const { return !switch_ids_.empty(); }
  bool alloc() const { return alloc_channel_ != nullptr; }
  size_t ring_pages() const { return ring_pages_; }
  size_t ring_count() const { return rings_.size(); }
  const perf_event_attr& attr() const { return attr_; }
  // The context-switch event's (--off-cpu); zeroed without it.
  const perf_event_attr& switch_attr() const { return switch_attr_; }

  // Starts / stops every event (for attach mode; `record -- CMD` relies on enable_on_exec).
  absl::Status Enable();
  absl::Status Disable();

  // Blocks until a ring reaches its wakeup mark, one of `extra` becomes ready, or `timeout_ms`
  // passes. Fills each extra pollfd's revents (an extra with a negative fd is skipped, as by
  // poll()). A ring whose event hung up (its task exited) is no longer waited on, so this never
  // returns at once forever; it is still drained. Returns false on EINTR (caller re-checks state).
  bool Poll(std::span<pollfd> extra, int timeout_ms);

  // Delivers the records now in the rings, in time order across CPUs, except the newest, which
  // a ring not yet read to its end could still precede: those are held for the next Drain (see
  // RecordSorter).
  void Drain(RecordSink& sink);
  // The last drain, once the target is gone or sampling stopped: delivers everything, held
  // records included.
  void Flush(RecordSink& sink);

  const SessionStats& stats() const { return stats_; }

  // Largest power-of-two data-page count such that `rings` rings fit in
  // /proc/sys/kernel/perf_event_mlock_kb (at least 8, at most 256).
  static size_t DefaultRingPages(size_t rings);

  // Data pages per ring for `--call-graph dwarf` when the mlock limit does not apply (root /
  // CAP_IPC_LOCK): 2 MiB rings up to 8 MiB in total, never less than 512 KiB per ring. Samples
  // with 8 KiB stack copies fill a 512 KiB ring in ~60 ms at 999 Hz. With `switch_samples`
  // (--off-cpu), 4 MiB rings up to 16 MiB in total: a cargo build's burst of switches at its
  // start overflowed 2 MiB rings in 2 runs of 10 (43 records lost), 4 MiB ones in none.
  static size_t UnlimitedDwarfRingPages(size_t rings, bool switch_samples = false);

  // Bytes in a ring that wake Poll: half of a ring of 1 MiB or more (the kernel's own default,
  // and perf's), so each wakeup drains many samples; a quarter of a smaller ring, which keeps
  // three quarters free for samples that arrive before the drain thread runs.
  static uint32_t WakeupBytes(size_t ring_bytes);

 private:
  Session() = default;
  absl::Status OpenAll(const SessionOptions& options);
  // Opens the context-switch event of `target` on every CPU into the CPU's ring.
  absl::Status OpenSwitchEvents(pid_t target, const std::vector<int>& cpus,
                                const PerfEventOpenFn& open_fn);
  absl::Status AddSwitchEvent(ScopedFd fd);
  // Drain (or with `flush`, Flush) into `sink`, through an EventTagger (which also counts the
  // losses the rings report).
  void Sort(RecordSink& sink, bool flush);
  // After the last drain: delivers as one LostView the records the events lost (PERF_FORMAT_LOST)
  // that no PERF_RECORD_LOST reported, as when a ring was still full when sampling stopped.
  void ReportUnreportedLosses(RecordSink& sink);
  void AddRingStats();
  class EventTagger;

  EventSpec event_;
  perf_event_attr attr_{};
  bool kernel_sampled_ = true;
  size_t ring_pages_ = 0;
  std::vector<std::string> notes_;
  std::vector<ScopedFd> fds_;      // every event; fds_[i] for i < rings_.size() own the rings
  std::vector<RingBuffer> rings_;  // one per CPU, then the allocation channel's
  std::vector<int> ring_poll_fds_; // per ring: the fd that polls readable when it has data
  AllocChannel* alloc_channel_ = nullptr;
  perf_event_attr switch_attr_{};
  std::vector<uint64_t> switch_ids_;  // sorted ids of the context-switch events
  std::unique_ptr<RecordSorter> sorter_;
  std::unique_ptr<AllocStackDecoder> alloc_stacks_;  // --alloc only
  std::vector<pollfd> pollfds_;    // scratch: rings then extras
  std::vector<bool> hung_up_;      // per ring: its fd reported POLLHUP/POLLERR
  uint64_t reported_lost_ = 0;     // records lost, as the rings' PERF_RECORD_LOST said so far
  SessionStats stats_;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_SESSION_H_
