// Builds perf_event_attr for sampling and opens perf events, turning the kernel's errno into a
// Status whose message says what to do (perf_event_paranoid, sample-rate limits, fd limits).
// Main thread only.
#ifndef NATIVEPROF_SAMPLER_PERF_EVENT_H_
#define NATIVEPROF_SAMPLER_PERF_EVENT_H_

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
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
  uint32_t wakeup_bytes = 0;     // poll() wakes when this many bytes are ready; 0 = every sample
};

// The sample_type nativeprof requests for these options.
perf_event_attr MakeSamplingAttr(const SamplingAttrOptions& options);

// Opens one event. `what` names it in error messages. Errors (message says what to do):
// kPermissionDenied (EACCES/EPERM: names /proc/sys/kernel/perf_event_paranoid and its value),
// kNotFound (ENOENT/EOPNOTSUPP/ENODEV: the event is not supported here), kInvalidArgument
// (EINVAL, e.g. a frequency above perf_event_max_sample_rate), kResourceExhausted (EMFILE).
absl::StatusOr<ScopedFd> OpenPerfEvent(const perf_event_attr& attr, pid_t pid, int cpu,
                                       int group_fd = -1);

// Human text for a permission failure: the paranoid setting, its value and the fixes.
std::string PerfPermissionAdvice();

// /proc/sys/kernel/perf_event_max_sample_rate, or 100000 if unreadable.
uint64_t MaxSampleRate();

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_PERF_EVENT_H_
