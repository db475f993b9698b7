// The one wait-and-drain loop of nativeprof: `record` and `stat` (launched and attached) and the
// library's reader thread all run it. It waits on the session's rings (when sampling), the
// target's fds and the signal fd, drains the session into a RecordSink after every wakeup, moves
// per-thread counter side bands out of their rings on the same cadence, and ends when the target
// is done, a signal stops it or the deadline passes; then it drains exactly once more. Runs on
// the calling thread (the session's drain thread); allocates only before the first wait.
#ifndef NATIVEPROF_SAMPLER_RECORD_LOOP_H_
#define NATIVEPROF_SAMPLER_RECORD_LOOP_H_

#include <chrono>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "base/signal_reader.h"
#include "sampler/counter_set.h"
#include "sampler/records.h"
#include "sampler/session.h"
#include "sampler/target.h"

namespace nativeprof::sampler {

struct RecordLoopOptions {
  // The sampling session and where its records go; both null when only counting.
  Session* session = nullptr;
  RecordSink* sink = nullptr;
  // Signals to read while waiting, handed to Target::OnSignal; null reads none (the library: the
  // host's signals are the host's).
  SignalReader* signals = nullptr;
  // Per-thread counters whose side bands are polled after every wakeup, as often as the rings are
  // drained (a full side-band ring loses records). The final read (CounterSet::ReadPerThread)
  // drains what is left.
  std::vector<CounterSet*> counters;
  // The loop ends by then even if the target is not done (`record -p --duration`).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Disable the session's events before the final drain, so that it is the last one: for targets
  // that keep running after the loop (attached processes). A launched command has exited, and the
  // library disables its events before asking the reader to stop.
  bool disable_before_final_drain = false;
  // Called once, right before the final drain (after disable_before_final_drain disabled the
  // session's events, where it is set).
  std::function<void()> before_final_drain;
};

enum class LoopEnd {
  kTargetDone,  // Target::Done()
  kSignal,      // Target::OnSignal said stop
  kDeadline,
};

struct RecordLoopResult {
  LoopEnd end = LoopEnd::kTargetDone;
  int signals_received = 0;
  // When the loop stopped waiting, before the final drain.
  std::chrono::steady_clock::time_point stopped_at;
};

// Starts `target`, runs the loop, drains the session a last time and returns how the loop ended.
// Errors: those of Target::Start (then nothing was waited on or drained).
absl::StatusOr<RecordLoopResult> RunRecordLoop(Target& target, const RecordLoopOptions& options);

// The poll() timeout of one round: at most `max_ms` (-1: no limit), and no later than
// `deadline`, rounded up so the loop does not spin through its last millisecond; 0 once the
// deadline passed.
int WaitMs(std::chrono::steady_clock::time_point deadline, int max_ms);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_RECORD_LOOP_H_
