// Per-thread breakdown of inherited counting events. With attr.inherit_stat the kernel writes a
// PERF_RECORD_READ (pid, tid, value, enabled, running, id) for every inherited thread or child
// process when it exits, into the parent event's ring buffer; COMM and FORK records of a separate
// inherited dummy event, in rings no other CPU writes, give thread names. The events are opened
// once per CPU with one ring per CPU, as perf record does: the kernel's ring-buffer writer is only
// safe against writers on the same CPU, and one ring shared by every CPU loses or freezes records
// under concurrent thread start/exit. CounterSet reads those rings through a RecordSorter, which
// parses the records and delivers them here in time order; CounterSideband is the state machine
// they drive (unit-testable with synthetic records).
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
#include "sampler/counter_value.h"
#include "sampler/event_spec.h"
#include "sampler/record_parser.h"
#include "sampler/records.h"

namespace nativeprof::sampler {

// Counters of one task (thread, or the main thread of a child process).
struct ThreadCounters {
  pid_t pid = -1;
  pid_t tid = -1;
  std::string comm;
  std::vector<CounterValue> values;  // one per CounterSet event, same order
};

// The layout of the side-band records: the counting events are opened with sample_id_all,
// sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME (so every record ends with {pid, tid, time})
// and read_format = value, enabled, running, id.
SampleFormat CounterSidebandFormat();

// Adds one per-CPU part of a counter to `sum`. Values and running times add up. Enabled times do
// not: the kernel advances a task's enabled time on the copies for every CPU at once (a thread
// that never ran on CPU 0 still shows enabled time there), while inherited copies mostly show
// their own CPU's share. The sum's enabled time is therefore the larger of the largest part and
// the summed running time: exact when nothing was multiplexed, an estimate otherwise.
void AddCpuPart(const ReadFormatValues& part, ReadFormatValues* sum);

class CounterSideband : public RecordSink {
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

  // Records, in time order. READ records with an id that is not ours are ignored.
  void OnRead(const ReadView& read) override;
  void OnComm(const CommView& comm) override;
  void OnTask(const TaskView& task) override;
  void OnLost(const LostView& lost) override;
  void OnSample(const SampleView&) override {}
  void OnMmap(const MmapView&) override {}

  // Names `tid` before any record does (a thread that existed before counting started has no
  // COMM record; the tasks it creates are named after it). Later COMM records win.
  void NameTask(pid_t tid, std::string comm);

  uint64_t lost() const { return lost_; }
  // Tasks whose counts did not all arrive: created (FORK) but with no READ record, or with fewer
  // READ records than CPUs for some event. Counts still alive are not lost yet; once the whole
  // target has exited, this is the number of tasks whose (missing) counts stay with the main
  // thread. The kernel writes an exiting task's READ records for every CPU's copy from the CPU
  // it exits on, into rings other CPUs write too, and that writer is not safe across CPUs: when
  // many threads exit at once on several CPUs some records are lost.
  size_t incomplete_tasks() const;

  // The per-task table of the records seen so far. Tasks that exited came with their own
  // READ records; the rest of each owner's total (`totals[owner]`: the owner itself plus what it
  // created that is still alive at read time) is the owner's row, so the rows add up to the
  // totals. Owners are the threads `owner_tids` of process `pid`. Sorted by pid, then tid; the
  // first owner first.
  std::vector<ThreadCounters> Build(const std::vector<std::vector<CounterValue>>& totals,
                                    pid_t pid, const std::vector<pid_t>& owner_tids) const;

 private:
  struct Task {
    pid_t pid = -1;
    pid_t tid = -1;
    size_t owner = 0;  // the counted task whose events it inherited
    std::string comm;
    std::vector<std::optional<ReadFormatValues>> reads;  // by event index, summed over CPUs
    std::vector<uint32_t> parts;                         // by event index: READ records seen
  };

  std::vector<EventSpec> events_;
  std::vector<uint32_t> expected_parts_;  // by event index: one READ per CPU copy
  struct IdTarget {
    size_t event = 0;
    size_t owner = 0;
  };
  absl::flat_hash_map<uint64_t, IdTarget> target_by_id_;
  absl::flat_hash_map<pid_t, std::string> comm_by_tid_;
  absl::flat_hash_map<pid_t, size_t> task_by_tid_;  // the tid's current instance in tasks_
  absl::flat_hash_set<pid_t> awaiting_read_;
  std::vector<Task> tasks_;
  uint64_t lost_ = 0;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_COUNTER_THREADS_H_
