// Counting events on a process that is already running (`nativeprof stat -p PID`): one
// inherited CounterSet per thread listed in /proc/PID/task, enabled at once, so existing threads
// and everything they create from now on are counted. Threads created between the listing and
// the opening by a thread not yet opened can be missed (a short race; perf has the same one).
// Owned by the main thread.
#ifndef NATIVEPROF_SAMPLER_COUNTER_ATTACH_H_
#define NATIVEPROF_SAMPLER_COUNTER_ATTACH_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/counter_set.h"
#include "sampler/counter_threads.h"
#include "sampler/counter_value.h"
#include "sampler/event_spec.h"

namespace nativeprof::sampler {

class AttachedCounters {
 public:
  // Errors: kNotFound (no such process), kPermissionDenied (perf_event_paranoid or ptrace
  // access refused; message says what to do), others as CounterSet::Open.
  static absl::StatusOr<AttachedCounters> Open(const std::vector<EventSpec>& events, pid_t pid,
                                               bool per_thread);

  // Stops counting (so the numbers do not move while they are printed).
  absl::Status Disable();
  // Totals over every thread, one per event. Errors as CounterSet::Read.
  absl::StatusOr<std::vector<CounterValue>> Read() const;
  // Per-thread mode: drains the side bands; call while waiting.
  void Poll();
  // Per-thread mode: one row per attached thread and per task that exited meanwhile.
  absl::StatusOr<std::vector<ThreadCounters>> ReadPerThread();

  size_t thread_count() const { return sets_.size(); }

 private:
  AttachedCounters() = default;
  pid_t pid_ = -1;
  std::vector<CounterSet> sets_;
  std::vector<std::string> comms_;  // comm of each set's thread at attach time
};

// Element-wise sum of per-thread values (same events in the same order): raw counts, scaled
// estimates and enabled/running times add up; supported/counted if any part was.
std::vector<CounterValue> SumCounterValues(const std::vector<std::vector<CounterValue>>& parts);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_COUNTER_ATTACH_H_
