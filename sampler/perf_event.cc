#include "sampler/perf_event.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"

namespace nativeprof::sampler {

perf_event_attr MakeSamplingAttr(const SamplingAttrOptions& o) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = o.event.type;
  attr.config = o.event.config;
  attr.freq = 1;
  attr.sample_freq = o.frequency_hz;
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_PERIOD;
  if (o.callchain) attr.sample_type |= PERF_SAMPLE_CALLCHAIN;
  if (o.regs_user_mask != 0) {
    attr.sample_type |= PERF_SAMPLE_REGS_USER;
    attr.sample_regs_user = o.regs_user_mask;
  }
  if (o.stack_user_bytes != 0) {
    attr.sample_type |= PERF_SAMPLE_STACK_USER;
    attr.sample_stack_user = o.stack_user_bytes;
  }
  attr.disabled = 1;
  attr.inherit = o.inherit ? 1 : 0;
  attr.enable_on_exec = o.enable_on_exec ? 1 : 0;
  attr.exclude_kernel = o.include_kernel ? 0 : 1;
  attr.exclude_hv = 1;
  attr.exclude_callchain_kernel = o.include_kernel ? 0 : 1;
  attr.mmap = 1;
  attr.mmap2 = 1;
  attr.comm = 1;
  attr.comm_exec = 1;
  attr.task = 1;
  attr.sample_id_all = 1;
  attr.build_id = o.build_id ? 1 : 0;
  if (o.wakeup_bytes > 0) {
    attr.watermark = 1;
    attr.wakeup_watermark = o.wakeup_bytes;
  } else {
    attr.wakeup_events = 1;
  }
  return attr;
}

uint64_t MaxSampleRate() {
  absl::StatusOr<int64_t> v = ReadIntegerFile("/proc/sys/kernel/perf_event_max_sample_rate");
  return v.ok() && *v > 0 ? static_cast<uint64_t>(*v) : 100000;
}

std::string PerfPermissionAdvice() {
  absl::StatusOr<int64_t> paranoid = ReadIntegerFile("/proc/sys/kernel/perf_event_paranoid");
  std::string value = paranoid.ok() ? absl::StrCat(*paranoid) : "unreadable";
  return absl::StrCat("/proc/sys/kernel/perf_event_paranoid is ", value,
                      "; run as root, grant CAP_PERFMON, or lower it with "
                      "'sysctl kernel.perf_event_paranoid=1' (kernel samples need <= 1)");
}

absl::StatusOr<ScopedFd> OpenPerfEvent(const perf_event_attr& attr, pid_t pid, int cpu,
                                       int group_fd) {
  int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd,
                                      PERF_FLAG_FD_CLOEXEC));
  if (fd >= 0) return ScopedFd(fd);
  int err = errno;
  std::string what = absl::StrCat("perf_event_open(type=", attr.type, ", config=", attr.config,
                                  ", pid=", pid, ", cpu=", cpu, ")");
  switch (err) {
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(
          absl::StrCat(what, ": ", std::strerror(err), "; ", PerfPermissionAdvice()));
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
      return absl::NotFoundError(
          absl::StrCat(what, ": event not supported by this kernel/CPU (", std::strerror(err), ")"));
    case EINVAL:
      if (attr.freq && attr.sample_freq > MaxSampleRate()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sampling frequency ", attr.sample_freq, " Hz is above the kernel's limit of ",
            MaxSampleRate(), " Hz (/proc/sys/kernel/perf_event_max_sample_rate)"));
      }
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", std::strerror(err)));
    case EMFILE:
    case ENFILE:
      return absl::ResourceExhaustedError(
          absl::StrCat(what, ": ", std::strerror(err), "; raise the open-file limit (ulimit -n)"));
    case ESRCH:
      return absl::UnavailableError(absl::StrCat(what, ": the process is gone"));
    default:
      return ErrnoError(err, what);
  }
}

}  // namespace nativeprof::sampler
