#include "sampler/record_loop.h"

#include <poll.h>

#include <algorithm>
#include <cstdint>
#include <span>

#include "base/status_macros.h"

namespace nativeprof::sampler {
namespace {

using Clock = std::chrono::steady_clock;

// Rings below their wakeup mark and the counters' side bands are drained at least this often
// (a quiet target's records still arrive promptly; a side-band ring only has to hold this long).
constexpr int kDrainIntervalMs = 100;

// Waits like Session::Poll when nothing is sampled. EINTR just ends the round early: the caller
// re-checks everything anyway.
void WaitWithoutSession(std::span<pollfd> fds, int timeout_ms) {
  for (pollfd& p : fds) p.revents = 0;
  ::poll(fds.data(), fds.size(), timeout_ms);
}

// The only drain after the target is done: records of the last moments may still sit below the
// rings' wakeup mark. Everything that must happen to the session once at the end goes here.
void FinalDrain(const RecordLoopOptions& options) {
  if (options.session == nullptr) return;
  if (options.disable_before_final_drain) (void)options.session->Disable();
  if (options.before_final_drain) options.before_final_drain();
  // The last records still held by the record sorter go out now: nothing older can come.
  options.session->Flush(*options.sink);
}

}  // namespace

int WaitMs(Clock::time_point deadline, int max_ms) {
  if (deadline == Clock::time_point::max()) return max_ms;
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const int64_t ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  const int64_t limit = max_ms < 0 ? INT32_MAX : max_ms;
  return static_cast<int>(std::min<int64_t>(ms, limit));
}

absl::StatusOr<RecordLoopResult> RunRecordLoop(Target& target, const RecordLoopOptions& options) {
  NP_RETURN_IF_ERROR(target.Start());
  RecordLoopResult result;
  // [signal fd] + the target's fds, rebuilt each round from the target's (which may stop
  // waiting on one) into storage reserved here, so the rounds allocate nothing.
  const size_t first_target_fd = options.signals != nullptr ? 1 : 0;
  std::vector<pollfd> fds;
  fds.reserve(first_target_fd + target.fds().size());
  const bool drains = options.session != nullptr || !options.counters.empty();
  while (true) {
    // Asked each round: a target may have something due sooner (a signal to forward).
    int max_wait_ms = target.max_wait_ms();
    if (drains) {
      max_wait_ms = max_wait_ms < 0 ? kDrainIntervalMs : std::min(max_wait_ms, kDrainIntervalMs);
    }
    fds.clear();
    if (options.signals != nullptr) fds.push_back({options.signals->fd(), POLLIN, 0});
    for (const pollfd& p : target.fds()) fds.push_back({p.fd, p.events, 0});
    const int timeout_ms = WaitMs(options.deadline, max_wait_ms);
    if (options.session != nullptr) {
      options.session->Poll(std::span<pollfd>(fds), timeout_ms);
      options.session->Drain(*options.sink);
    } else {
      WaitWithoutSession(std::span<pollfd>(fds), timeout_ms);
    }
    std::span<pollfd> target_fds = target.fds();
    for (size_t i = 0; i < target_fds.size(); ++i) {
      target_fds[i].revents = fds[first_target_fd + i].revents;
    }
    if (options.signals != nullptr && (fds[0].revents & POLLIN)) {
      bool stop = false;
      while (int sig = options.signals->Read()) {
        ++result.signals_received;
        const ReceivedSignal received{.number = sig,
                                      .from_terminal = options.signals->last_from_kernel(),
                                      .sender = options.signals->last_sender()};
        stop |= target.OnSignal(received) == SignalVerdict::kStop;
      }
      if (stop) {
        result.end = LoopEnd::kSignal;
        break;
      }
    }
    if (target.Done()) {
      result.end = LoopEnd::kTargetDone;
      break;
    }
    if (Clock::now() >= options.deadline) {
      result.end = LoopEnd::kDeadline;
      break;
    }
    for (CounterSet* set : options.counters) set->Poll();
  }
  result.stopped_at = Clock::now();
  FinalDrain(options);
  return result;
}

}  // namespace nativeprof::sampler
