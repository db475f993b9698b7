#include "sampler/perf_event.h"

#include <sys/syscall.h>
#include <time.h>
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
  if (IsNoSamplesEvent(o.event)) {
    attr.sample_period = 1;  // the dummy event never fires; perf gives it 1 as well
  } else {
    attr.freq = 1;
    attr.sample_freq = o.frequency_hz;
  }
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
  if (o.off_cpu || o.alloc) attr.sample_type |= PERF_SAMPLE_IDENTIFIER;
  if (o.alloc) attr.sample_type |= PERF_SAMPLE_ADDR;
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
  if (o.monotonic_clock) {
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
  }
  if (o.count_lost) attr.read_format = PERF_FORMAT_LOST;
  if (o.wakeup_bytes > 0) {
    attr.watermark = 1;
    attr.wakeup_watermark = o.wakeup_bytes;
  } else {
    attr.wakeup_events = 1;
  }
  return attr;
}

perf_event_attr MakeContextSwitchAttr(const SamplingAttrOptions& o) {
  SamplingAttrOptions switches = o;
  switches.off_cpu = true;
  switches.include_kernel = true;
  perf_event_attr attr = MakeSamplingAttr(switches);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
  attr.freq = 0;
  attr.sample_period = 1;
  // The stack-copy size is in each sample, so the two events may differ in it and still share a
  // ring; a copy of 0 bytes keeps the field (the layout) and copies nothing.
  if (o.stack_user_bytes != 0) attr.sample_stack_user = o.switch_stack_user_bytes;
  attr.exclude_callchain_kernel = o.include_kernel ? 0 : 1;
  // With the full stack copy the user frames come from DWARF, as with perf --call-graph dwarf.
  // The kernel's frame-pointer walk of the user stack at every switch cost the target ~3 % more
  // at 20k switches/s (bench/off_cpu_e2e.sh), and would only finish stacks deeper than the copy.
  // A smaller copy (--off-cpu-stack) keeps the walk: it finishes what the copy leaves out.
  if (attr.sample_stack_user != 0 && attr.sample_stack_user >= o.stack_user_bytes) {
    attr.exclude_callchain_user = 1;
  }
  attr.mmap = 0;
  attr.mmap2 = 0;
  attr.comm = 0;
  attr.comm_exec = 0;
  attr.task = 0;
  attr.build_id = 0;
  attr.context_switch = 1;
  return attr;
}

uint64_t MaxSampleRate() {
  absl::StatusOr<int64_t> v = ReadIntegerFile("/proc/sys/kernel/perf_event_max_sample_rate");
  return v.ok() && *v > 0 ? static_cast<uint64_t>(*v) : 100000;
}

namespace {
constexpr char kParanoidPath[] = "/proc/sys/kernel/perf_event_paranoid";
}  // namespace

int SyscallPerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd,
                         unsigned long flags) {
  return static_cast<int>(::syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags));
}

std::string PerfPermissionAdvice(std::optional<int64_t> paranoid) {
  const std::string level = paranoid.has_value() ? absl::StrCat(*paranoid) : "unreadable";
  return absl::StrCat(
      kParanoidPath, " is ", level,
      " (2 allows unprivileged users user-space sampling and counting of their own processes "
      "only, 3 or more allows nothing); run as root or with CAP_PERFMON, or lower it: "
      "sysctl -w kernel.perf_event_paranoid=1 (kernel stacks need <= 1)");
}

std::string PerfPermissionAdvice() {
  absl::StatusOr<int64_t> paranoid = ReadIntegerFile(kParanoidPath);
  return PerfPermissionAdvice(paranoid.ok() ? std::optional<int64_t>(*paranoid) : std::nullopt);
}

std::string PerfPermissionMessage(const std::string& event_name, int err,
                                  std::optional<int64_t> paranoid) {
  return absl::StrCat("perf_event_open refused event '", event_name, "' (", std::strerror(err),
                      "); ", PerfPermissionAdvice(paranoid));
}

bool IsUnsupportedEventErrno(int err) {
  return err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL || err == ENXIO ||
         err == E2BIG;
}

absl::Status PerfEventOpenError(int err, const perf_event_attr& attr, pid_t pid, int cpu,
                                const std::string& event_name) {
  const std::string what =
      absl::StrCat("perf_event_open(", event_name, ", pid=", pid, ", cpu=", cpu, ")");
  switch (err) {
    case EACCES:
    case EPERM: {
      absl::StatusOr<int64_t> paranoid = ReadIntegerFile(kParanoidPath);
      return absl::PermissionDeniedError(PerfPermissionMessage(
          event_name, err, paranoid.ok() ? std::optional<int64_t>(*paranoid) : std::nullopt));
    }
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
      return absl::UnavailableError(absl::StrCat("no process with PID ", pid, " (it exited)"));
    default:
      if (IsUnsupportedEventErrno(err)) {
        return absl::NotFoundError(absl::StrCat("event '", event_name,
                                                "' is not supported by this kernel/CPU (",
                                                std::strerror(err), ")"));
      }
      return ErrnoError(err, what);
  }
}

absl::StatusOr<ScopedFd> OpenPerfEvent(const perf_event_attr& attr, pid_t pid, int cpu,
                                       const std::string& event_name, int group_fd,
                                       const PerfEventOpenFn& open_fn) {
  perf_event_attr copy = attr;
  const int fd = open_fn ? open_fn(&copy, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC)
                         : SyscallPerfEventOpen(&copy, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
  if (fd >= 0) return ScopedFd(fd);
  return PerfEventOpenError(errno, attr, pid, cpu, event_name);
}

}  // namespace nativeprof::sampler
