// How nativeprof's own thread is scheduled (issue 15). On a saturated machine the thread that
// drains the rings is one runnable task among hundreds and waits for a CPU while the rings fill,
// so `record` raises that thread's priority where it is permitted, and reads how long it waited
// (its run-queue time in /proc/thread-self/schedstat) to tell a starved profiler from a ring that
// is too small. Per thread: every call acts on or reads the calling thread. Not signal-safe.
#ifndef NATIVEPROF_BASE_SCHEDULING_H_
#define NATIVEPROF_BASE_SCHEDULING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof {

// The three figures of /proc/.../schedstat (kernel's sched_info: CONFIG_SCHED_INFO).
struct SchedStat {
  uint64_t on_cpu_ns = 0;       // time spent running
  uint64_t run_queue_ns = 0;    // time spent runnable, waiting for a CPU
  uint64_t timeslices = 0;      // times it was given a CPU
};

// Parses "ON_CPU_NS RUN_QUEUE_NS TIMESLICES\n". Errors: kDataLoss when a field is missing.
absl::StatusOr<SchedStat> ParseSchedStat(absl::string_view text);

// The calling thread's figures. Errors: those of ReadSmallFile (kNotFound on a kernel without
// CONFIG_SCHED_INFO), kDataLoss.
absl::StatusOr<SchedStat> ReadThreadSchedStat();

// The fields of a /proc/PID/stat (or /proc/PID/task/TID/stat) text after the command name,
// from field 3 (the state) on; empty when there is no command name. The name (field 2) may hold
// spaces and parentheses; the fields after it do not.
std::vector<absl::string_view> ProcStatFieldsAfterComm(absl::string_view stat);

// Parses the age of a process from its /proc/PID/stat text (field 22, starttime, in clock ticks
// since boot) and the time since boot now. Errors: kDataLoss when malformed.
absl::StatusOr<double> ParseProcessAgeSeconds(absl::string_view stat, double boot_seconds_now,
                                              long ticks_per_second);
// Seconds since this process was created (forked), with the kernel's tick resolution (10 ms at
// USER_HZ 100). Errors: those of ReadSmallFile, kDataLoss.
absl::StatusOr<double> ProcessAgeSeconds();

enum class PriorityKind { kUnchanged, kRealtime, kNice };

struct PriorityBoost {
  PriorityKind kind = PriorityKind::kUnchanged;
  int value = 0;     // the SCHED_FIFO priority (kRealtime) or the nice value (kNice)
  // The thread's nice before the boost. A child forked afterwards starts at nice 0
  // (SCHED_RESET_ON_FORK) and should set this one to run as if nativeprof were not boosted.
  int original_nice = 0;
  std::string why;   // kUnchanged: the reason, e.g. "SCHED_FIFO and nice -20 not permitted"
  // "SCHED_FIFO 1", "nice -20" or "normal".
  std::string Describe() const;
};

// The scheduling calls RaiseThreadPriority makes, on the calling thread; each returns 0 or -1
// with errno set, like the syscalls. A testing seam; the defaults are the real calls.
struct SchedulerCalls {
  std::function<int()> get_policy;                   // sched_getscheduler(0), flags stripped
  std::function<int()> get_nice;                     // getpriority(PRIO_PROCESS, gettid())
  std::function<int(int policy, int priority)> set_policy;  // sched_setscheduler(0, ...)
  std::function<int(int nice)> set_nice;             // setpriority(PRIO_PROCESS, gettid(), nice)
  std::function<int()> nice_floor;  // the lowest nice RLIMIT_NICE allows: 20 - rlim_cur
  static SchedulerCalls Real();
};

// The SCHED_FIFO priority and the nice value RaiseThreadPriority asks for. FIFO 1 is above every
// normal task and below every real-time one (kernel threads, audio, irq threads at 50), so the
// drain thread preempts the target only while it has records to drain and then sleeps in
// poll(); RT throttling (sched_rt_runtime_us) bounds it even if it misbehaved.
inline constexpr int kBoostRealtimePriority = 1;
inline constexpr int kBoostNice = -20;

// Raises the calling thread's priority, trying in turn: SCHED_FIFO kBoostRealtimePriority (root,
// CAP_SYS_NICE or RLIMIT_RTPRIO >= 1; a cgroup without real-time runtime refuses even root);
// then nice kBoostNice, or the lowest nice RLIMIT_NICE allows; else leaves it. Both carry
// SCHED_RESET_ON_FORK, so a process or thread created afterwards starts at SCHED_OTHER, nice 0
// (it may then restore `original_nice`, as ChildProcess does). A thread
// that already runs real-time, SCHED_IDLE or SCHED_BATCH, or (when FIFO is refused) at nice -20,
// is left alone: the user chose that. Never fails; returns what it did.
//
// `nice_only` skips SCHED_FIFO. A woken real-time thread runs on the CPU it last ran on and
// preempts whatever normal task is there, while a normal thread is placed on an idle CPU: when
// the target switches tens of thousands of times a second (record --off-cpu) and every wakeup
// comes from one of its CPUs, FIFO preempts the target at each one (4% slower hand-offs here).
PriorityBoost RaiseThreadPriority(const SchedulerCalls& calls = SchedulerCalls::Real(),
                                  bool nice_only = false);

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_SCHEDULING_H_
