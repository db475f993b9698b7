#include "sampler/counter_set.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace nativeprof::sampler {
namespace {

constexpr char kParanoidPath[] = "/proc/sys/kernel/perf_event_paranoid";

int SyscallPerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd,
                         unsigned long flags) {
  return static_cast<int>(::syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags));
}

perf_event_attr CountingAttr(const EventSpec& event, const CounterOptions& options) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = event.type;
  attr.config = event.config;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  if (options.per_thread) attr.read_format |= PERF_FORMAT_ID;
  attr.disabled = options.enable_on_exec ? 1 : 0;
  attr.enable_on_exec = options.enable_on_exec ? 1 : 0;
  attr.inherit = options.inherit ? 1 : 0;
  // inherit_stat keeps each inherited task's count its own (the kernel otherwise may swap
  // contexts between sibling tasks) and makes exiting tasks emit PERF_RECORD_READ.
  attr.inherit_stat = options.per_thread ? 1 : 0;
  return attr;
}

}  // namespace

bool IsUnsupportedEventErrno(int err) {
  return err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL || err == ENXIO ||
         err == E2BIG;
}

std::string PerfPermissionMessage(const std::string& event_name, int err,
                                  std::optional<int64_t> paranoid) {
  std::string level = paranoid.has_value() ? absl::StrCat(*paranoid) : "unreadable";
  return absl::StrCat(
      "perf_event_open refused event '", event_name, "' (", std::strerror(err), "); ",
      kParanoidPath, " is ", level,
      " (2 allows unprivileged users user-space counting of their own processes only, 3 or more "
      "allows nothing); run as root or with CAP_PERFMON, or lower it: "
      "sysctl -w kernel.perf_event_paranoid=1");
}

std::vector<EventSpec> DefaultCounterEvents() {
  static constexpr const char* kNames[] = {
      "task-clock", "context-switches", "cpu-migrations",   "page-faults",  "cycles",
      "instructions", "branches",       "branch-misses",    "cache-references", "cache-misses"};
  std::vector<EventSpec> events;
  for (const char* name : kNames) events.push_back(*ParseEventSpec(name));
  return events;
}

CounterSet::CounterSet(CounterSet&&) noexcept = default;
CounterSet& CounterSet::operator=(CounterSet&&) noexcept = default;
CounterSet::~CounterSet() = default;

absl::StatusOr<CounterSet> CounterSet::Open(const std::vector<EventSpec>& events, pid_t pid,
                                            const CounterOptions& options) {
  if (events.empty()) return absl::InvalidArgumentError("no counter events given");
  if (options.per_thread && !options.inherit) {
    return absl::InvalidArgumentError("per-thread counting needs inherit");
  }
  const PerfEventOpenFn open_fn =
      options.open_fn ? options.open_fn : PerfEventOpenFn(SyscallPerfEventOpen);
  CounterSet set;
  set.pid_ = pid;
  set.per_thread_ = options.per_thread;
  set.events_ = events;
  int sideband_owner = -1;
  for (const EventSpec& event : events) {
    Slot slot;
    slot.event = event;
    perf_event_attr attr = CountingAttr(event, options);
    if (options.per_thread && sideband_owner < 0) {
      // The first opened event also reports thread names: COMM (incl. exec) and FORK records.
      attr.comm = 1;
      attr.comm_exec = 1;
      attr.task = 1;
    }
    int fd = open_fn(&attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
      // Kernel-mode counting needs privileges (perf_event_paranoid >= 2); user-mode may still
      // be allowed. perf falls back the same way.
      attr.exclude_kernel = 1;
      attr.exclude_hv = 1;
      fd = open_fn(&attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd >= 0) {
        Logger("sampler")->info("counting '{}' in user mode only (kernel mode refused)",
                                event.name);
      }
    }
    if (fd < 0) {
      const int err = errno;
      if (err == EACCES || err == EPERM) {
        absl::StatusOr<int64_t> paranoid = ReadIntegerFile(kParanoidPath);
        return absl::PermissionDeniedError(PerfPermissionMessage(
            event.name, err, paranoid.ok() ? std::optional<int64_t>(*paranoid) : std::nullopt));
      }
      if (err == ESRCH) {
        return absl::NotFoundError(absl::StrCat("no process with pid ", pid));
      }
      if (!IsUnsupportedEventErrno(err)) {
        return ErrnoError(err, absl::StrCat("perf_event_open(", event.name, ")"));
      }
      slot.unsupported_reason = std::strerror(err);
      Logger("sampler")->debug("event '{}' not supported: {}", event.name, std::strerror(err));
    } else {
      slot.fd.Reset(fd);
      if (options.per_thread && sideband_owner < 0) sideband_owner = static_cast<int>(set.slots_.size());
    }
    set.slots_.push_back(std::move(slot));
  }
  if (options.per_thread) {
    // The kernel refuses mmap() on inherited per-task events, so the side band goes to the ring
    // of a non-inherited dummy event on the same task; inherited copies of the counting events
    // write into their parent's buffer, which SET_OUTPUT redirects there.
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    int fd = open_fn(&attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return ErrnoError("perf_event_open(dummy side-band event)");
    set.ring_fd_.Reset(fd);
    absl::StatusOr<CounterRing> ring = CounterRing::Map(fd, options.ring_pages);
    if (!ring.ok()) return ring.status();
    set.ring_.emplace(*std::move(ring));
    std::vector<uint64_t> ids;
    for (Slot& slot : set.slots_) {
      if (slot.fd.valid()) {
        if (::ioctl(slot.fd.get(), PERF_EVENT_IOC_ID, &slot.id) != 0) {
          return ErrnoError(absl::StrCat("PERF_EVENT_IOC_ID(", slot.event.name, ")"));
        }
        if (::ioctl(slot.fd.get(), PERF_EVENT_IOC_SET_OUTPUT, fd) != 0) {
          return ErrnoError(absl::StrCat("PERF_EVENT_IOC_SET_OUTPUT(", slot.event.name, ")"));
        }
      }
      ids.push_back(slot.id);
    }
    set.sideband_ = std::make_unique<CounterSideband>(events, std::move(ids));
  }
  return set;
}

absl::Status CounterSet::Enable() {
  for (Slot& slot : slots_) {
    if (slot.fd.valid() && ::ioctl(slot.fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
      return ErrnoError(absl::StrCat("enable counter ", slot.event.name));
    }
  }
  return absl::OkStatus();
}

absl::Status CounterSet::Disable() {
  for (Slot& slot : slots_) {
    if (slot.fd.valid() && ::ioctl(slot.fd.get(), PERF_EVENT_IOC_DISABLE, 0) != 0) {
      return ErrnoError(absl::StrCat("disable counter ", slot.event.name));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CounterValue>> CounterSet::Read() const {
  std::vector<CounterValue> values;
  values.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    if (!slot.fd.valid()) {
      values.push_back(UnsupportedCounterValue(slot.event, slot.unsupported_reason));
      continue;
    }
    uint8_t buf[4 * sizeof(uint64_t)];
    ssize_t n;
    do {
      n = ::read(slot.fd.get(), buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return ErrnoError(absl::StrCat("read counter ", slot.event.name));
    NP_ASSIGN_OR_RETURN(ReadFormatValues r,
                        ParseReadFormat(std::span<const uint8_t>(buf, static_cast<size_t>(n)),
                                        per_thread_));
    values.push_back(MakeCounterValue(slot.event, r.value, r.time_enabled, r.time_running));
  }
  return values;
}

void CounterSet::Poll() {
  if (ring_.has_value() && sideband_ != nullptr) ring_->Drain(sideband_.get());
}

absl::StatusOr<std::vector<ThreadCounters>> CounterSet::ReadPerThread(
    const std::string& main_comm) {
  if (!per_thread_ || sideband_ == nullptr) {
    return absl::FailedPreconditionError("counters were not opened per thread");
  }
  Poll();
  NP_ASSIGN_OR_RETURN(std::vector<CounterValue> totals, Read());
  return sideband_->Build(totals, pid_, main_comm);
}

uint64_t CounterSet::lost_records() const {
  return sideband_ != nullptr ? sideband_->lost() : 0;
}

}  // namespace nativeprof::sampler
