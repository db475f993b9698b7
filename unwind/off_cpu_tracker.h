// Turns the switch records of an --off-cpu recording into off-CPU intervals: each thread's
// switch-out (its stack, sampled by the context-switch event, and whether it was preempted) is
// paired with the switch-in that ends it, in record time order (the record sorter's). Also keeps
// each thread's lifetime within the recording, so on- and off-CPU time can be checked against it.
// Fed by StackCollector on the drain thread; read after the recording stopped.
#ifndef NATIVEPROF_UNWIND_OFF_CPU_TRACKER_H_
#define NATIVEPROF_UNWIND_OFF_CPU_TRACKER_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace nativeprof::unwind {

// An interval with no sampled stack: the switch sample was lost, the thread had not run yet
// (created and waiting for its first CPU), or it was already off-CPU when recording started.
inline constexpr uint32_t kNoSampledStack = 0xffffffffu;

struct OffCpuInterval {
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t start_ns = 0;     // switched out (record time)
  uint64_t duration_ns = 0;  // until switched in again, the thread exited, or recording stopped
  uint32_t stack = kNoSampledStack;  // StackCollector stack index of the switch-out sample
  bool waiting = false;      // runnable all along (preempted, or new): waiting for a CPU
  // The thread's first interval, before it first ran: since its creation while recording
  // (`created`), or since the recording began.
  bool first = false;
  bool created = false;
};

// One thread's time in the recording. Lifetime = [first_ns, last_ns]: from its creation or the
// first record about it to its exit or the end of recording.
struct ThreadTimes {
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint64_t blocked_ns = 0;   // off-CPU waiting for an event (sleep, I/O, lock)
  uint64_t waiting_ns = 0;   // off-CPU while runnable
  uint64_t switches = 0;     // switch-outs
  bool ran = false;          // was on a CPU at some point while recording
  bool exited = false;

  // Between the main thread's exit and the exec that another of its process's threads then made,
  // when that thread took over the main thread's tid (OffCpuTracker::OnExec): that thread's own
  // lifetime holds that time.
  uint64_t gone_ns = 0;

  uint64_t lifetime_ns() const { return last_ns - first_ns - gone_ns; }
  // Time on a CPU: the lifetime outside the off-CPU intervals, exact from the switch records.
  // CPU samples (count times period) estimate the same time with sampling error, and at tens of
  // thousands of switches per second the kernel's cpu-clock also counts the switch path's own
  // work (the switch sample's stack copy): in a mutex ping-pong, samples said 16 % more than
  // this, and samples plus off-CPU time came to 105-111 % of the lifetime.
  uint64_t on_cpu_ns() const {
    const uint64_t off = blocked_ns + waiting_ns;
    return lifetime_ns() > off ? lifetime_ns() - off : 0;
  }
};

class OffCpuTracker {
 public:
  // `start_ns`: when sampling started, in record time (0 when unknown); a thread whose first
  // record is a switch-in was off-CPU since then. May be set again, later, before the first
  // record: the threads noted so far then start at the new time.
  void set_recording_start(uint64_t start_ns);
  // A thread that exists when recording starts (attach mode), so a thread that never runs is
  // still listed. `runnable`: it was running or runnable then (/proc's 'R'), so if its first
  // record is a switch-in, it was waiting for a CPU until then, not blocked.
  void NoteExistingThread(int32_t pid, int32_t tid, bool runnable = false);
  // The stack of an existing thread that was blocked when recording started, read from /proc
  // by `read_ns` (sampler::SnapshotBlockedThread): the interval it is in gets this stack if the
  // thread was still off-CPU then, that is if it first runs later.
  void NoteBlockedAtStart(int32_t pid, int32_t tid, uint64_t read_ns, uint32_t stack);

  // The context-switch sample taken as `tid` is switched out, with its stack.
  void OnSwitchSample(int32_t pid, int32_t tid, uint64_t time_ns, uint32_t stack);
  void OnSwitch(int32_t pid, int32_t tid, uint64_t time_ns, bool out, bool preempted);
  // A CPU sample or any record the thread wrote while on a CPU.
  void OnThreadRan(int32_t pid, int32_t tid, uint64_t time_ns);
  // A new thread or process, runnable from `time_ns` until it first runs.
  void OnThreadCreated(int32_t pid, int32_t tid, uint64_t time_ns);
  void OnThreadExited(int32_t tid, uint64_t time_ns);
  // Process `pid` exec'd a new image. The kernel ended its other threads first; one that was
  // not the main thread and made the call goes on as tid `pid` (its old tid gets no exit
  // record, and the old main thread's exit came before): every other tid of the process ends
  // here, and tid `pid` runs on.
  void OnExec(int32_t pid, uint64_t time_ns);

  // Closes every interval still open at `stop_ns` (threads blocked when recording stopped) and
  // ends every live thread's lifetime there. Call once, after the last record.
  void Finish(uint64_t stop_ns);

  // Every interval with stack `from` gets stack `to` instead. After Finish.
  void ReplaceStack(uint32_t from, uint32_t to);

  const std::deque<OffCpuInterval>& intervals() const { return intervals_; }
  // Every thread seen, by tid.
  std::vector<ThreadTimes> Threads() const;

 private:
  struct State {
    ThreadTimes times;
    bool seen = false;       // first_ns is set
    bool off = false;        // switched out, interval open
    bool waiting = false;
    bool runnable_at_start = false;  // NoteExistingThread's
    bool first = false;      // the open interval is the thread's first (OffCpuInterval::first)
    bool created = false;    // created while recording (OnThreadCreated)
    uint64_t out_ns = 0;
    uint32_t stack = kNoSampledStack;
    // NoteBlockedAtStart's snapshot, for the interval the thread was in when recording began.
    uint32_t start_stack = kNoSampledStack;
    uint64_t start_stack_ns = 0;
    // A switch sample not yet claimed by its switch-out record.
    uint32_t sample_stack = kNoSampledStack;
    uint64_t sample_ns = 0;
  };
  State& StateOf(int32_t pid, int32_t tid, uint64_t time_ns);
  void Close(State& s, uint64_t end_ns);
  // Opens the interval of a thread that was off-CPU from its first record until `end_ns`.
  void OpenFirstInterval(State& s, uint64_t end_ns);

  uint64_t recording_start_ns_ = 0;
  absl::flat_hash_map<int32_t, State> threads_;
  // A deque, not a vector: it grows by one interval per switch on the drain thread, and a
  // vector's doubling copy of megabytes stalled the drain long enough for a 20k switches/s
  // target to overrun its ring (~500 records lost at each of 2^16 and 2^17 intervals).
  std::deque<OffCpuInterval> intervals_;
  // The tids seen of each process, so an exec looks at its own process's only.
  absl::flat_hash_map<int32_t, std::vector<int32_t>> tids_of_pid_;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_OFF_CPU_TRACKER_H_
