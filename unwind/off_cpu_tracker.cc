#include "unwind/off_cpu_tracker.h"

#include <algorithm>
#include <utility>

namespace nativeprof::unwind {
namespace {

// The switch sample and the switch-out record are written by the same call into the scheduler,
// microseconds apart; a sample further from the record than this belongs to another switch.
constexpr uint64_t kSampleToRecordNs = 1'000'000;

}  // namespace

OffCpuTracker::State& OffCpuTracker::StateOf(int32_t pid, int32_t tid, uint64_t time_ns) {
  State& s = threads_[tid];
  if (!s.seen) {
    s.seen = true;
    s.times.pid = pid;
    s.times.tid = tid;
    s.times.first_ns = time_ns;
    tids_of_pid_[pid].push_back(tid);
  }
  return s;
}

void OffCpuTracker::set_recording_start(uint64_t start_ns) {
  for (auto& [tid, s] : threads_) {
    if (s.times.first_ns == recording_start_ns_) s.times.first_ns = start_ns;
  }
  recording_start_ns_ = start_ns;
}

void OffCpuTracker::NoteExistingThread(int32_t pid, int32_t tid, bool runnable) {
  // Seen since the start: if its first record is a switch-in, it was off-CPU until then.
  StateOf(pid, tid, recording_start_ns_).runnable_at_start = runnable;
}

void OffCpuTracker::NoteBlockedAtStart(int32_t pid, int32_t tid, uint64_t read_ns,
                                       uint32_t stack) {
  State& s = StateOf(pid, tid, recording_start_ns_);
  s.start_stack = stack;
  s.start_stack_ns = read_ns;
}

void OffCpuTracker::OpenFirstInterval(State& s, uint64_t end_ns) {
  s.off = true;
  s.first = true;
  s.out_ns = s.times.first_ns;
  // The snapshot holds if the thread had not run yet when it was read.
  s.stack = s.start_stack != kNoSampledStack && end_ns > s.start_stack_ns ? s.start_stack
                                                                           : kNoSampledStack;
  // A thread found blocked in a system call was not waiting for a CPU, whatever its state read.
  s.waiting = s.runnable_at_start && s.stack == kNoSampledStack;
}

void OffCpuTracker::Close(State& s, uint64_t end_ns) {
  const bool first = std::exchange(s.first, false);
  if (!s.off) return;
  s.off = false;
  if (end_ns <= s.out_ns) return;
  OffCpuInterval iv;
  iv.pid = s.times.pid;
  iv.tid = s.times.tid;
  iv.start_ns = s.out_ns;
  iv.duration_ns = end_ns - s.out_ns;
  iv.stack = s.stack;
  iv.waiting = s.waiting;
  iv.first = first;
  iv.created = s.created;
  (iv.waiting ? s.times.waiting_ns : s.times.blocked_ns) += iv.duration_ns;
  intervals_.push_back(iv);
}

void OffCpuTracker::OnSwitchSample(int32_t pid, int32_t tid, uint64_t time_ns, uint32_t stack) {
  State& s = StateOf(pid, tid, time_ns);
  if (s.times.exited) return;
  s.times.ran = true;
  // The record already came (it can, at equal times): the sample is its stack.
  if (s.off && s.stack == kNoSampledStack && time_ns + kSampleToRecordNs >= s.out_ns &&
      time_ns <= s.out_ns + kSampleToRecordNs) {
    s.stack = stack;
    return;
  }
  s.sample_stack = stack;
  s.sample_ns = time_ns;
}

void OffCpuTracker::OnSwitch(int32_t pid, int32_t tid, uint64_t time_ns, bool out,
                             bool preempted) {
  State& s = StateOf(pid, tid, time_ns);
  if (s.times.exited) return;
  if (out) {
    // Two outs in a row: the switch-in between them was lost; the first interval ends here.
    Close(s, time_ns);
    s.times.ran = true;
    s.off = true;
    s.out_ns = time_ns;
    s.waiting = preempted;
    s.stack = kNoSampledStack;
    if (s.sample_stack != kNoSampledStack && s.sample_ns <= time_ns + kSampleToRecordNs &&
        time_ns <= s.sample_ns + kSampleToRecordNs) {
      s.stack = s.sample_stack;
    }
    s.sample_stack = kNoSampledStack;
    ++s.times.switches;
    return;
  }
  if (!s.off && !s.times.ran && recording_start_ns_ != 0 && s.times.first_ns < time_ns) {
    // Its first record is a switch-in: it was off-CPU since the recording (or its life) began.
    OpenFirstInterval(s, time_ns);
  }
  Close(s, time_ns);
  s.times.ran = true;
}

void OffCpuTracker::OnThreadRan(int32_t pid, int32_t tid, uint64_t time_ns) {
  State& s = StateOf(pid, tid, time_ns);
  if (s.times.exited) return;
  // Running while the books say off-CPU: the switch-in was lost.
  if (s.off) Close(s, time_ns);
  s.times.ran = true;
}

void OffCpuTracker::OnThreadCreated(int32_t pid, int32_t tid, uint64_t time_ns) {
  State& s = threads_[tid];
  if (!s.seen || s.times.pid != pid) tids_of_pid_[pid].push_back(tid);
  s = State{};  // a reused tid is a new thread
  s.seen = true;
  s.times.pid = pid;
  s.times.tid = tid;
  s.times.first_ns = time_ns;
  s.off = true;
  s.first = true;
  s.created = true;
  s.out_ns = time_ns;
  s.waiting = true;
}

void OffCpuTracker::OnThreadExited(int32_t tid, uint64_t time_ns) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  State& s = it->second;
  Close(s, time_ns);
  s.times.exited = true;
  s.times.last_ns = std::max(s.times.first_ns, time_ns);
}

void OffCpuTracker::OnExec(int32_t pid, uint64_t time_ns) {
  bool another_ran_on = false;  // a thread other than the main one was still there
  if (auto tids = tids_of_pid_.find(pid); tids != tids_of_pid_.end()) {
    for (int32_t tid : tids->second) {
      State& s = threads_[tid];
      if (tid == pid || s.times.pid != pid || s.times.exited) continue;
      another_ran_on = true;
      Close(s, time_ns);
      s.times.exited = true;
      s.times.last_ns = std::max(s.times.first_ns, time_ns);
    }
  }
  State& main = StateOf(pid, pid, time_ns);
  if (main.times.exited) {
    if (another_ran_on) {
      // The thread that exec'd carries on under the main thread's tid, on a CPU. The time since
      // the main thread's exit is in that thread's own lifetime.
      main.times.gone_ns += time_ns > main.times.last_ns ? time_ns - main.times.last_ns : 0;
      main.times.exited = false;
      main.off = false;
    } else {
      // An exited main thread and no other: a process of an earlier life of this pid.
      OnThreadCreated(pid, pid, time_ns);
      State& fresh = threads_[pid];
      fresh.off = false;
      fresh.first = false;
      fresh.waiting = false;
    }
  }
  threads_[pid].times.ran = true;
}

void OffCpuTracker::Finish(uint64_t stop_ns) {
  for (auto& [tid, s] : threads_) {
    if (s.times.exited) continue;
    if (!s.off && !s.times.ran && s.times.first_ns < stop_ns) {
      // Never ran while recording: off-CPU all along.
      OpenFirstInterval(s, stop_ns);
    }
    Close(s, stop_ns);
    s.times.last_ns = std::max(s.times.first_ns, stop_ns);
  }
  std::sort(intervals_.begin(), intervals_.end(),
            [](const OffCpuInterval& a, const OffCpuInterval& b) {
              return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.tid < b.tid;
            });
}

void OffCpuTracker::ReplaceStack(uint32_t from, uint32_t to) {
  for (OffCpuInterval& iv : intervals_) {
    if (iv.stack == from) iv.stack = to;
  }
}

std::vector<ThreadTimes> OffCpuTracker::Threads() const {
  std::vector<ThreadTimes> out;
  out.reserve(threads_.size());
  for (const auto& [tid, s] : threads_) out.push_back(s.times);
  std::sort(out.begin(), out.end(), [](const ThreadTimes& a, const ThreadTimes& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.tid < b.tid;
  });
  return out;
}

}  // namespace nativeprof::unwind
