// Per-thread breakdown of inherited counting events. With attr.inherit_stat the kernel writes a
// PERF_RECORD_READ (pid, tid, value, enabled, running, id) for every inherited thread or child
// process when it exits, into the parent event's ring buffer; COMM and FORK records give thread
// names. The events are opened once per CPU with one ring per CPU, as perf record does: the
// kernel's ring-buffer writer is only safe against writers on the same CPU, and one ring shared
// by every CPU loses or freezes records under concurrent thread start/exit. Records from several
// rings are ordered by their sample_id time before they are applied.
// CounterSideband is the pure state machine fed with those records (unit-testable with synthetic
// bytes); CounterRing maps one ring and drains it. Both are used by CounterSet on the thread
// that owns it.
#ifndef NATIVEPROF_SAMPLER_COUNTER_THREADS_H_
#define NATIVEPROF_SAMPLER_COUNTER_THREADS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "sampler/counter_value.h"
#include "sampler/event_spec.h"
#include "sampler/ring_buffer.h"

namespace nativeprof::sampler {

// Counters of one task (thread, or the main thread of a child process).
struct ThreadCounters {
  pid_t pid = -1;
  pid_t tid = -1;
  std::string comm;
  std::vector<CounterValue> values;  // one per CounterSet event, same order
};

// The sample_id trailer every side-band record carries: the counting events are opened with
// sample_id_all and sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME, so it is {pid, tid, time}.
inline constexpr size_t kCounterSampleIdSize = 16;

// Adds one per-CPU part of a counter to `sum`. Values and running times add up. Enabled times do
// not: the kernel advances a task's enabled time on the copies for every CPU at once (a thread
// that never ran on CPU 0 still shows enabled time there), while inherited copies mostly show
// their own CPU's share. The sum's enabled time is therefore the larger of the largest part and
// the summed running time: exact when nothing was multiplexed, an estimate otherwise.
void AddCpuPart(const ReadFormatValues& part, ReadFormatValues* sum);

class CounterSideband {
 public:
  // A kernel id (PERF_EVENT_IOC_ID) of one CPU's copy of event `event` opened on the counted
  // task number `owner`; READ records of the tasks that owner creates carry it.
  struct CounterId {
    size_t event = 0;
    size_t owner = 0;
    uint64_t id = 0;
  };
  // `ids` lists every opened copy; an event without ids was not opened. Each owner has
  // `cpu_count` copies of each opened event, so an exiting task sends that many READ records.
  CounterSideband(std::vector<EventSpec> events, size_t cpu_count,
                  const std::vector<CounterId>& ids);

  // Queues one whole record, header and sample_id trailer included. Unknown or short records are
  // counted in malformed() and otherwise ignored (the bytes come from the kernel, but a bug must
  // not crash).
  void OnRecord(std::span<const uint8_t> record);

  // Called after every ring was drained once: applies the queued records that are older than
  // the newest record of the previous round (anything that old has been read from every ring),
  // in time order.
  void EndRound();
  // Applies everything queued; for when the target is gone or counting stopped.
  void Finish();

  // Names `tid` before any record does (a thread that existed before counting started has no
  // COMM record; the tasks it creates are named after it). Later COMM records win.
  void NameTask(pid_t tid, std::string comm);

  uint64_t lost() const { return lost_; }
  uint64_t malformed() const { return malformed_; }
  // Tasks whose counts did not all arrive: created (FORK) but with no READ record, or with fewer
  // READ records than CPUs for some event. Counts still alive are not lost yet; once the whole
  // target has exited, this is the number of tasks whose (missing) counts stay with the main
  // thread. The kernel writes an exiting task's READ records for every CPU's copy from the CPU
  // it exits on, into rings other CPUs write too, and that writer is not safe across CPUs: when
  // many threads exit at once on several CPUs some records are lost.
  size_t incomplete_tasks() const;

  // The per-task table of the records applied so far. Tasks that exited came with their own
  // READ records; the rest of each owner's total (`totals[owner]`: the owner itself plus what it
  // created that is still alive at read time) is the owner's row, so the rows add up to the
  // totals. Owners are the threads `owner_tids` of process `pid`. Sorted by pid, then tid; the
  // first owner first.
  std::vector<ThreadCounters> Build(const std::vector<std::vector<CounterValue>>& totals,
                                    pid_t pid, const std::vector<pid_t>& owner_tids) const;

 private:
  struct Queued {
    uint64_t time = 0;
    uint32_t type = 0;
    pid_t pid = -1;
    pid_t tid = -1;
    pid_t ptid = -1;
    size_t event_index = 0;
    size_t owner = 0;
    ReadFormatValues values;
    std::string comm;
  };
  struct Task {
    pid_t pid = -1;
    pid_t tid = -1;
    size_t owner = 0;  // the counted task whose events it inherited
    std::string comm;
    std::vector<std::optional<ReadFormatValues>> reads;  // by event index, summed over CPUs
    std::vector<uint32_t> parts;                         // by event index: READ records seen
  };
  void Apply(const Queued& q);
  void ApplyQueuedUpTo(uint64_t time);

  std::vector<EventSpec> events_;
  std::vector<uint32_t> expected_parts_;  // by event index: one READ per CPU copy
  struct IdTarget {
    size_t event = 0;
    size_t owner = 0;
  };
  absl::flat_hash_map<uint64_t, IdTarget> target_by_id_;
  std::vector<Queued> queued_;
  uint64_t newest_seen_ = 0;
  uint64_t applied_limit_ = 0;  // newest time seen when the previous round ended
  absl::flat_hash_map<pid_t, std::string> comm_by_tid_;
  absl::flat_hash_map<pid_t, size_t> task_by_tid_;  // the tid's current instance in tasks_
  absl::flat_hash_set<pid_t> awaiting_read_;
  std::vector<Task> tasks_;
  uint64_t lost_ = 0;
  uint64_t malformed_ = 0;
};

// The mmap'd ring buffer of one CPU (the counting fds of that CPU are redirected into it with
// PERF_EVENT_IOC_SET_OUTPUT).
class CounterRing {
 public:
  // Maps 1 + `data_pages` pages of `fd` (data_pages a power of two).
  // Errors: kInvalidArgument (data_pages), the mmap errno's code.
  static absl::StatusOr<CounterRing> Map(int fd, size_t data_pages);

  // Feeds every complete record in the ring to `sideband` and frees the space. Safe to call
  // while the target runs; records that wrap are reassembled in a scratch buffer. Reads through
  // RingBuffer, so a header whose size the ring cannot hold skips the batch instead of being read.
  void Drain(CounterSideband* sideband);

  // For after every writer is done (the target exited): feeds records the kernel wrote past the
  // published data_head. Concurrent writers on several CPUs can leave the ring's nesting count
  // stuck, after which the kernel keeps writing records but never publishes data_head again.
  // Reads only the ring's first lap, where such records cannot be confused with old ones; stops
  // at the first implausible header. Returns the number of records recovered.
  size_t DrainUnpublished(CounterSideband* sideband);

 private:
  CounterRing(ScopedMmap map, size_t page_size, size_t data_size);
  ScopedMmap map_;
  size_t page_size_ = 0;
  size_t data_size_ = 0;
  RingBuffer reader_;  // over map_'s pages
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_COUNTER_THREADS_H_
