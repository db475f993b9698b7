// The one owner of perf_event_open(2): builds perf_event_attr for sampling, opens events through
// a replaceable open function, and turns the kernel's errno into a Status whose message says
// what to do (perf_event_paranoid, sample-rate limits, fd limits). Sampling (Session) and
// counting (CounterSet) both open through here. Main thread only.
#ifndef NATIVEPROF_SAMPLER_PERF_EVENT_H_
#define NATIVEPROF_SAMPLER_PERF_EVENT_H_

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "sampler/event_spec.h"

namespace nativeprof::sampler {

struct SamplingAttrOptions {
  EventSpec event;
  uint64_t frequency_hz = 999;   // samples per second per thread (freq mode)
  bool include_kernel = true;    // sample kernel stacks too (needs paranoid <= 1 or CAP_PERFMON)
  bool callchain = true;         // PERF_SAMPLE_CALLCHAIN (the kernel's frame-pointer walk)
  uint64_t regs_user_mask = 0;   // PERF_SAMPLE_REGS_USER when non-zero
  uint32_t stack_user_bytes = 0; // PERF_SAMPLE_STACK_USER when non-zero
  bool inherit = true;           // follow threads and children
  bool enable_on_exec = true;    // start counting when the forked child execs
  bool build_id = true;          // MMAP2 carries build-ids (Linux 5.12+)
  // Record times in CLOCK_MONOTONIC (use_clockid, Linux 4.1+), comparable with clock_gettime:
  // lets the record sorter deliver most records in the drain that reads them.
  bool monotonic_clock = true;
  // PERF_FORMAT_LOST (Linux 6.0+): read() gives the records each event could not write. The
  // ring reports its losses in a PERF_RECORD_LOST only when a later record fits, so a ring still
  // full when sampling stops (a drain thread starved of CPU) would otherwise report none.
  bool count_lost = true;
  uint32_t wakeup_bytes = 0;     // poll() wakes when this many bytes are ready; 0 = every sample
  // --off-cpu: also sample every context switch of the targets (MakeContextSwitchAttr). Adds
  // PERF_SAMPLE_IDENTIFIER to both events, which share rings, to tell their samples apart.
  bool off_cpu = false;
  // User-stack bytes copied at each switch (0: none; the user frames are then the kernel's
  // frame-pointer walk). Applies only when stack_user_bytes != 0.
  uint32_t switch_stack_user_bytes = 0;
  // --alloc: the allocation preload writes samples in this event's layout into a ring of its own
  // (AllocChannel). Adds PERF_SAMPLE_IDENTIFIER (to tell them apart) and PERF_SAMPLE_ADDR (the
  // block's address).
  bool alloc = false;
};

// perf_event_open(2) as a replaceable function: returns an fd, or -1 with errno set. Tests pass
// a fake to simulate refusals, missing PMUs and PMU values on a machine without one.
using PerfEventOpenFn =
    std::function<int(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags)>;

// The real syscall.
int SyscallPerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd,
                         unsigned long flags);

// The sample_type nativeprof requests for these options.
perf_event_attr MakeSamplingAttr(const SamplingAttrOptions& options);

// The context-switch event for --off-cpu: context-switches with period 1 (a sample, with the
// same registers and callchain as CPU samples, each time a target thread is switched out) plus
// PERF_RECORD_SWITCH records (switch in and out, preempted or not). Emits no MMAP/COMM/FORK
// records of its own: the sampling event does. It always samples in kernel mode (the switch
// happens there), so it needs kernel-side events whatever include_kernel says; without
// include_kernel only the kernel part of its callchain is dropped.
perf_event_attr MakeContextSwitchAttr(const SamplingAttrOptions& options);

// Opens one event with `open_fn` (null: the real syscall). `event_name` names it in messages.
// Errors: PerfEventOpenError's.
absl::StatusOr<ScopedFd> OpenPerfEvent(const perf_event_attr& attr, pid_t pid, int cpu,
                                       const std::string& event_name, int group_fd = -1,
                                       const PerfEventOpenFn& open_fn = nullptr);

// The Status for perf_event_open's errno `err` (the one mapping; the message says what to do):
// kPermissionDenied (EACCES/EPERM: PerfPermissionMessage), kNotFound (IsUnsupportedEventErrno
// except EINVAL: the event does not exist here), kInvalidArgument (EINVAL, naming the frequency
// limit when that is the cause), kResourceExhausted (EMFILE/ENFILE), kUnavailable (ESRCH: the
// task is gone), else the errno's own code.
absl::Status PerfEventOpenError(int err, const perf_event_attr& attr, pid_t pid, int cpu,
                                const std::string& event_name);

// True for the errnos that mean "this event does not exist here" (counting keeps such an event
// as `not supported`; EINVAL is among them because the kernel answers unsupported configs so).
bool IsUnsupportedEventErrno(int err);

// What to do about a refusal: /proc/sys/kernel/perf_event_paranoid, its value (`paranoid`;
// nullopt when unreadable, read from /proc when not given) and the fixes.
std::string PerfPermissionAdvice(std::optional<int64_t> paranoid);
std::string PerfPermissionAdvice();

// The one-line explanation for an EACCES/EPERM: names the event, then PerfPermissionAdvice.
std::string PerfPermissionMessage(const std::string& event_name, int err,
                                  std::optional<int64_t> paranoid);

// /proc/sys/kernel/perf_event_max_sample_rate, or 100000 if unreadable.
uint64_t MaxSampleRate();

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_PERF_EVENT_H_
