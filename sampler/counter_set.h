// Counting perf events on a target process (perf stat's engine): one fd per event, opened on the
// target with `inherit` so its threads and children count too, enabled on exec (or now), read as
// value + time_enabled + time_running so multiplexed hardware counters can be scaled. Optionally
// keeps a per-thread breakdown (see counter_threads.h); then every event is opened once per CPU. Owned and used by one thread (the
// command's main thread); not signal-safe.
#ifndef NATIVEPROF_SAMPLER_COUNTER_SET_H_
#define NATIVEPROF_SAMPLER_COUNTER_SET_H_

#include <linux/perf_event.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "sampler/counter_threads.h"
#include "sampler/counter_value.h"
#include "sampler/event_spec.h"
#include "sampler/perf_event.h"
#include "sampler/record_sorter.h"
#include "sampler/ring_buffer.h"

namespace nativeprof::sampler {

struct CounterOptions {
  // True: counting starts when the (not yet exec'd) target calls exec, so the profiler's own
  // fork/exec setup is not counted. False: counting starts at Open().
  bool enable_on_exec = true;
  // Count the target's threads and child processes created after Open().
  bool inherit = true;
  // Keep a per-thread breakdown (inherit_stat + PERF_RECORD_READ side band). Needs inherit.
  bool per_thread = false;
  // Data pages of each CPU's per-thread side-band ring (power of two). Each exiting task writes
  // 64 bytes per event into every CPU's ring; the rings are drained by Poll(), so they only have
  // to hold one poll interval.
  size_t ring_pages = 64;
  // Per-thread mode: the CPUs to open on; empty = every online CPU. A testing seam.
  std::vector<int> cpus;
  // Testing seam; empty = the real syscall.
  PerfEventOpenFn open_fn;
};

class CounterSet {
 public:
  // Opens one counting event per entry of `events` on `pid` (cpu = -1, every CPU it runs on; in
  // per-thread mode one per CPU, summed by Read()).
  // Events the kernel cannot give (ENOENT, EOPNOTSUPP, ENODEV, EINVAL, ...) stay in the set as
  // unsupported. When the kernel refuses kernel-mode counting (EACCES/EPERM) the event is retried
  // with exclude_kernel, as perf does. Errors: kPermissionDenied with PerfPermissionMessage()
  // when an event is refused even then; kUnavailable when `pid` does not exist; other errno codes
  // (e.g. EMFILE -> kResourceExhausted) as is; kInvalidArgument for an empty list.
  static absl::StatusOr<CounterSet> Open(const std::vector<EventSpec>& events, pid_t pid,
                                         const CounterOptions& options);

  // The same on several tasks at once (e.g. every thread of a running process), `tids[0]` the
  // main one. A later task that no longer exists (ESRCH) is skipped; tids() lists those opened.
  // In per-thread mode every task's events share one side-band ring per CPU.
  static absl::StatusOr<CounterSet> Open(const std::vector<EventSpec>& events,
                                         const std::vector<pid_t>& tids,
                                         const CounterOptions& options);

  CounterSet(CounterSet&&) noexcept;
  CounterSet& operator=(CounterSet&&) noexcept;
  ~CounterSet();

  // Starts / stops every supported event now (PERF_EVENT_IOC_ENABLE / DISABLE). Errors: the
  // ioctl's errno code.
  absl::Status Enable();
  absl::Status Disable();

  // Totals over the whole target (every task), one per event in Open() order. Unsupported
  // events come back with supported == false. Errors: kDataLoss / the read errno code.
  absl::StatusOr<std::vector<CounterValue>> Read() const;

  // Per-thread mode only: moves side-band records out of the rings. Call periodically while the
  // target runs (a full ring loses records) and once after it exited.
  void Poll();

  // Per-thread mode: names tids()[i] `comms[i]` until a COMM record renames it. Threads that
  // already ran before counting started send none, and what they create is named after them.
  // Call before the target runs on.
  void NameTasks(const std::vector<std::string>& comms);

  // Per-thread mode: one row per task that exited while counted, plus one per opened task
  // (which also carries what it created that is still alive). Errors: kFailedPrecondition when
  // not in per-thread mode; as Read().
  absl::StatusOr<std::vector<ThreadCounters>> ReadPerThread();

  // Side-band records the kernel dropped because a ring was full (per-thread numbers of the
  // affected threads then stay with the main thread).
  uint64_t lost_records() const;
  // Per-thread mode: tasks whose counts have not all arrived (see
  // CounterSideband::incomplete_tasks). Once the whole target has exited, these are tasks whose
  // missing counts stay with the main thread.
  size_t incomplete_tasks() const;

  const std::vector<EventSpec>& events() const { return events_; }
  pid_t pid() const { return pid_; }
  const std::vector<pid_t>& tids() const { return tids_; }

 private:
  struct Slot {
    EventSpec event;
    // Per task, one fd (cpu -1) or one per CPU in per-thread mode: fds[task * cpu_count_ + cpu].
    // None when unsupported.
    std::vector<ScopedFd> fds;
    std::string unsupported_reason;
  };
  CounterSet() = default;
  // Opens every event on `tid` (on each of `cpus`), keeping the fallbacks found in `attrs`.
  // False when a task other than the `first` no longer exists (nothing of it is kept).
  absl::StatusOr<bool> OpenTask(pid_t tid, bool first, const std::vector<int>& cpus,
                                const PerfEventOpenFn& open_fn,
                                std::vector<perf_event_attr>* attrs);
  // Per-thread mode: per CPU, one ring that every counting fd of that CPU writes its READ
  // records to, and one for thread names and creations.
  absl::Status OpenSideband(const std::vector<int>& cpus, size_t ring_pages, bool enable_on_exec,
                            const PerfEventOpenFn& open_fn);
  // One task's value of one event, its CPUs' parts summed.
  absl::StatusOr<ReadFormatValues> ReadTask(const Slot& slot, size_t task) const;
  // Per task, one value per event.
  absl::StatusOr<std::vector<std::vector<CounterValue>>> ReadEachTask() const;

  pid_t pid_ = -1;
  std::vector<pid_t> tids_;
  size_t cpu_count_ = 1;
  bool per_thread_ = false;
  std::vector<EventSpec> events_;
  std::vector<Slot> slots_;
  // Per-thread mode: the dummy events whose rings hold the side band (two per CPU), and the
  // inherited dummy events that report thread names (one per task and CPU).
  std::vector<ScopedFd> ring_fds_;
  std::vector<ScopedFd> tracking_fds_;
  std::vector<RingBuffer> rings_;
  std::unique_ptr<RecordSorter> sorter_;
  std::unique_ptr<CounterSideband> sideband_;
};

// perf stat's default events: task-clock, context-switches, cpu-migrations, page-faults, cycles,
// instructions, branches, branch-misses, cache-references, cache-misses.
std::vector<EventSpec> DefaultCounterEvents();

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_COUNTER_SET_H_
