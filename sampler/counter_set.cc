#include "sampler/counter_set.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "sampler/cpu_list.h"

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

namespace {

// perf_event_open with perf's fallback: when the kernel refuses kernel-mode counting
// (perf_event_paranoid >= 2), user-mode may still be allowed. On success with the fallback,
// `attr` keeps exclude_kernel so the remaining CPUs open the same way.
int OpenCounting(const PerfEventOpenFn& open_fn, perf_event_attr* attr, pid_t pid, int cpu,
                 const EventSpec& event) {
  int fd = open_fn(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0 && (errno == EACCES || errno == EPERM) && !attr->exclude_kernel) {
    attr->exclude_kernel = 1;
    attr->exclude_hv = 1;
    fd = open_fn(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) {
      Logger("sampler")->info("counting '{}' in user mode only (kernel mode refused)", event.name);
    } else {
      attr->exclude_kernel = 0;
      attr->exclude_hv = 0;
    }
  }
  return fd;
}

// The error for a refused open; kOk (with `reason` set) when the event is merely unsupported.
absl::Status OpenError(int err, const EventSpec& event, pid_t pid, std::string* reason) {
  if (err == EACCES || err == EPERM) {
    absl::StatusOr<int64_t> paranoid = ReadIntegerFile(kParanoidPath);
    return absl::PermissionDeniedError(PerfPermissionMessage(
        event.name, err, paranoid.ok() ? std::optional<int64_t>(*paranoid) : std::nullopt));
  }
  if (err == ESRCH) return absl::NotFoundError(absl::StrCat("no process with PID ", pid));
  if (!IsUnsupportedEventErrno(err)) {
    return ErrnoError(err, absl::StrCat("perf_event_open(", event.name, ")"));
  }
  *reason = std::strerror(err);
  Logger("sampler")->debug("event '{}' not supported: {}", event.name, *reason);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CounterSet> CounterSet::Open(const std::vector<EventSpec>& events, pid_t pid,
                                            const CounterOptions& options) {
  if (events.empty()) return absl::InvalidArgumentError("no counter events given");
  if (options.per_thread && !options.inherit) {
    return absl::InvalidArgumentError("per-thread counting needs inherit");
  }
  const PerfEventOpenFn open_fn =
      options.open_fn ? options.open_fn : PerfEventOpenFn(SyscallPerfEventOpen);
  // Per-thread mode opens every event once per CPU: the inherited copies then write their
  // side-band records into a ring of the CPU they run on (see counter_threads.h for why).
  std::vector<int> cpus = {-1};
  if (options.per_thread) cpus = options.cpus.empty() ? OnlineCpus() : options.cpus;
  CounterSet set;
  set.pid_ = pid;
  set.per_thread_ = options.per_thread;
  set.events_ = events;
  bool have_sideband = false;
  for (const EventSpec& event : events) {
    Slot slot;
    slot.event = event;
    perf_event_attr attr = CountingAttr(event, options);
    if (options.per_thread) {
      // The first opened event also reports thread names: COMM (incl. exec) and FORK records.
      if (!have_sideband) {
        attr.comm = 1;
        attr.comm_exec = 1;
        attr.task = 1;
      }
      attr.sample_id_all = 1;
      attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    }
    for (int cpu : cpus) {
      const int fd = OpenCounting(open_fn, &attr, pid, cpu, event);
      if (fd < 0) {
        const int err = errno;
        NP_RETURN_IF_ERROR(OpenError(err, event, pid, &slot.unsupported_reason));
        slot.fds.clear();  // unsupported on one CPU: not counted anywhere
        break;
      }
      slot.fds.emplace_back(fd);
    }
    if (!slot.fds.empty()) have_sideband = true;
    set.slots_.push_back(std::move(slot));
  }
  if (options.per_thread) {
    std::vector<std::vector<uint64_t>> ids;
    for (size_t c = 0; c < cpus.size(); ++c) {
      // The kernel refuses mmap() on inherited events; a plain dummy event per CPU holds the
      // ring, and SET_OUTPUT sends that CPU's counting events (and their inherited copies) there.
      perf_event_attr attr;
      std::memset(&attr, 0, sizeof(attr));
      attr.size = sizeof(attr);
      attr.type = PERF_TYPE_SOFTWARE;
      attr.config = PERF_COUNT_SW_DUMMY;
      attr.disabled = 1;
      attr.exclude_kernel = 1;
      const int fd = open_fn(&attr, pid, cpus[c], -1, PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) return ErrnoError("perf_event_open(dummy side-band event)");
      ScopedFd ring_fd(fd);
      NP_ASSIGN_OR_RETURN(CounterRing ring, CounterRing::Map(fd, options.ring_pages));
      for (Slot& slot : set.slots_) {
        if (slot.fds.empty()) continue;
        uint64_t id = 0;
        if (::ioctl(slot.fds[c].get(), PERF_EVENT_IOC_ID, &id) != 0) {
          return ErrnoError(absl::StrCat("PERF_EVENT_IOC_ID(", slot.event.name, ")"));
        }
        if (::ioctl(slot.fds[c].get(), PERF_EVENT_IOC_SET_OUTPUT, fd) != 0) {
          return ErrnoError(absl::StrCat("PERF_EVENT_IOC_SET_OUTPUT(", slot.event.name, ")"));
        }
        slot.ids.push_back(id);
      }
      set.ring_fds_.push_back(std::move(ring_fd));
      set.rings_.push_back(std::move(ring));
    }
    for (const Slot& slot : set.slots_) ids.push_back(slot.ids);
    set.sideband_ = std::make_unique<CounterSideband>(events, std::move(ids));
  }
  return set;
}

absl::Status CounterSet::Enable() {
  for (Slot& slot : slots_) {
    for (ScopedFd& fd : slot.fds) {
      if (::ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
        return ErrnoError(absl::StrCat("enable counter ", slot.event.name));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CounterSet::Disable() {
  for (Slot& slot : slots_) {
    for (ScopedFd& fd : slot.fds) {
      if (::ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0) != 0) {
        return ErrnoError(absl::StrCat("disable counter ", slot.event.name));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CounterValue>> CounterSet::Read() const {
  std::vector<CounterValue> values;
  values.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    if (slot.fds.empty()) {
      values.push_back(UnsupportedCounterValue(slot.event, slot.unsupported_reason));
      continue;
    }
    ReadFormatValues sum;
    for (const ScopedFd& fd : slot.fds) {
      uint8_t buf[4 * sizeof(uint64_t)];
      ssize_t n;
      do {
        n = ::read(fd.get(), buf, sizeof(buf));
      } while (n < 0 && errno == EINTR);
      if (n < 0) return ErrnoError(absl::StrCat("read counter ", slot.event.name));
      NP_ASSIGN_OR_RETURN(ReadFormatValues r,
                          ParseReadFormat(std::span<const uint8_t>(buf, static_cast<size_t>(n)),
                                          per_thread_));
      AddCpuPart(r, &sum);
    }
    values.push_back(MakeCounterValue(slot.event, sum.value, sum.time_enabled, sum.time_running));
  }
  return values;
}

void CounterSet::Poll() {
  if (sideband_ == nullptr) return;
  for (CounterRing& ring : rings_) ring.Drain(sideband_.get());
  sideband_->EndRound();
}

absl::StatusOr<std::vector<ThreadCounters>> CounterSet::ReadPerThread(
    const std::string& main_comm) {
  if (!per_thread_ || sideband_ == nullptr) {
    return absl::FailedPreconditionError("counters were not opened per thread");
  }
  size_t recovered = 0;
  for (CounterRing& ring : rings_) {
    ring.Drain(sideband_.get());
    recovered += ring.DrainUnpublished(sideband_.get());
  }
  if (recovered > 0) {
    Logger("sampler")->debug("{} side-band records recovered past data_head", recovered);
  }
  sideband_->Finish();
  NP_ASSIGN_OR_RETURN(std::vector<CounterValue> totals, Read());
  return sideband_->Build(totals, pid_, main_comm);
}

size_t CounterSet::incomplete_tasks() const {
  return sideband_ != nullptr ? sideband_->incomplete_tasks() : 0;
}

uint64_t CounterSet::lost_records() const {
  return sideband_ != nullptr ? sideband_->lost() : 0;
}

}  // namespace nativeprof::sampler
