// Counting events on a process that is already running (`nativeprof stat -p PID`): one
// inherited CounterSet over every thread listed in /proc/PID/task, enabled at once, so existing
// threads and everything they create from now on are counted (in per-thread mode with one
// side-band ring per CPU for all of them, not per thread). Threads created between the listing and
// the opening by a thread not yet opened can be missed (a short race; perf has the same one).
// Owned by the main thread.
#ifndef NATIVEPROF_SAMPLER_COUNTER_ATTACH_H_
#define NATIVEPROF_SAMPLER_COUNTER_ATTACH_H_

#include <sys/types.h>

#include <optional>
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
  // The counters themselves, for the record loop to poll their side bands while waiting.
  CounterSet& set() { return *set_; }
  // Per-thread mode: one row per attached thread and per task that exited meanwhile.
  absl::StatusOr<std::vector<ThreadCounters>> ReadPerThread();

  size_t thread_count() const { return set_->tids().size(); }

 private:
  explicit AttachedCounters(CounterSet set) : set_(std::move(set)) {}
  std::optional<CounterSet> set_;  // always set; optional only because CounterSet has no
                                   // default constructor
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_COUNTER_ATTACH_H_
