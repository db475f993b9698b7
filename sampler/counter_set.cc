#include "sampler/counter_set.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "sampler/cpu_list.h"

namespace nativeprof::sampler {
namespace {

uint64_t CountingReadFormat(bool per_thread) {
  return per_thread ? CounterSidebandFormat().read_format
                    : PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
}

perf_event_attr CountingAttr(const EventSpec& event, const CounterOptions& options) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = event.type;
  attr.config = event.config;
  attr.read_format = CountingReadFormat(options.per_thread);
  if (options.per_thread) {
    const SampleFormat sideband = CounterSidebandFormat();
    attr.sample_type = sideband.sample_type;
    attr.sample_id_all = 1;
  }
  attr.disabled = options.enable_on_exec ? 1 : 0;
  attr.enable_on_exec = options.enable_on_exec ? 1 : 0;
  attr.inherit = options.inherit ? 1 : 0;
  // inherit_stat keeps each inherited task's count its own (the kernel otherwise may swap
  // contexts between sibling tasks) and makes exiting tasks emit PERF_RECORD_READ.
  attr.inherit_stat = options.per_thread ? 1 : 0;
  return attr;
}

}  // namespace

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
absl::Status OpenError(int err, const perf_event_attr& attr, const EventSpec& event, pid_t pid,
                       int cpu, std::string* reason) {
  if (!IsUnsupportedEventErrno(err)) return PerfEventOpenError(err, attr, pid, cpu, event.name);
  *reason = std::strerror(err);
  Logger("sampler")->debug("event '{}' not supported: {}", event.name, *reason);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CounterSet> CounterSet::Open(const std::vector<EventSpec>& events, pid_t pid,
                                            const CounterOptions& options) {
  return Open(events, std::vector<pid_t>{pid}, options);
}

absl::StatusOr<CounterSet> CounterSet::Open(const std::vector<EventSpec>& events,
                                            const std::vector<pid_t>& tids,
                                            const CounterOptions& options) {
  if (events.empty()) return absl::InvalidArgumentError("no counter events given");
  if (tids.empty()) return absl::InvalidArgumentError("no task to count given");
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
  set.pid_ = tids.front();
  set.per_thread_ = options.per_thread;
  set.cpu_count_ = cpus.size();
  set.events_ = events;
  std::vector<perf_event_attr> attrs;
  for (const EventSpec& event : events) {
    Slot slot;
    slot.event = event;
    set.slots_.push_back(std::move(slot));
    attrs.push_back(CountingAttr(event, options));
  }
  for (size_t t = 0; t < tids.size(); ++t) {
    NP_ASSIGN_OR_RETURN(const bool opened, set.OpenTask(tids[t], t == 0, cpus, open_fn, &attrs));
    if (opened) set.tids_.push_back(tids[t]);
  }
  if (options.per_thread) {
    NP_RETURN_IF_ERROR(set.OpenSideband(cpus, options.ring_pages, options.enable_on_exec,
                                        open_fn));
  }
  return set;
}

absl::StatusOr<bool> CounterSet::OpenTask(pid_t tid, bool first, const std::vector<int>& cpus,
                                          const PerfEventOpenFn& open_fn,
                                          std::vector<perf_event_attr>* attrs) {
  for (size_t e = 0; e < slots_.size(); ++e) {
    Slot& slot = slots_[e];
    if (!first && slot.fds.empty()) continue;  // unsupported (found on the first task)
    perf_event_attr& attr = (*attrs)[e];
    for (int cpu : cpus) {
      const int fd = OpenCounting(open_fn, &attr, tid, cpu, slot.event);
      if (fd >= 0) {
        slot.fds.emplace_back(fd);
        continue;
      }
      const int err = errno;
      if (err == ESRCH && !first) {
        // A thread that exited since it was listed is not an error: forget what it opened.
        const size_t keep = tids_.size() * cpu_count_;
        for (Slot& s : slots_) {
          if (s.fds.size() > keep) s.fds.resize(keep);
        }
        return false;
      }
      NP_RETURN_IF_ERROR(OpenError(err, attr, slot.event, tid, cpu, &slot.unsupported_reason));
      slot.fds.clear();  // unsupported on one CPU or task: not counted anywhere
      break;
    }
  }
  return true;
}

absl::Status CounterSet::OpenSideband(const std::vector<int>& cpus, size_t ring_pages,
                                      bool enable_on_exec, const PerfEventOpenFn& open_fn) {
  // The kernel refuses mmap() on inherited events; a plain dummy event per CPU holds each ring,
  // and SET_OUTPUT sends other events of that CPU (and their inherited copies) there.
  perf_event_attr holder;
  std::memset(&holder, 0, sizeof(holder));
  holder.size = sizeof(holder);
  holder.type = PERF_TYPE_SOFTWARE;
  holder.config = PERF_COUNT_SW_DUMMY;
  holder.disabled = 1;
  holder.exclude_kernel = 1;
  auto open_ring = [&](int cpu, size_t pages, const char* what) -> absl::StatusOr<int> {
    NP_ASSIGN_OR_RETURN(ScopedFd ring_fd, OpenPerfEvent(holder, pid_, cpu, what, -1, open_fn));
    NP_ASSIGN_OR_RETURN(RingBuffer ring, RingBuffer::Map(ring_fd.get(), pages, 2 * cpus.size()));
    const int fd = ring_fd.get();
    ring_fds_.push_back(std::move(ring_fd));
    rings_.push_back(std::move(ring));
    return fd;
  };
  auto set_output = [](int fd, int ring_fd, const std::string& what) -> absl::Status {
    if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) != 0) {
      return ErrnoError(absl::StrCat("PERF_EVENT_IOC_SET_OUTPUT(", what, ")"));
    }
    return absl::OkStatus();
  };
  // Thread names (COMM, also at exec) and FORK come from an inherited dummy event per task and
  // CPU with a ring of its own. Every one of its records is written by the CPU whose ring it is;
  // the READ records of exiting threads are not (see counter_threads.h), and when two CPUs write
  // one ring at once a record can be lost, which in a shared ring left a thread with its
  // creator's name.
  const SampleFormat format = CounterSidebandFormat();
  perf_event_attr tracking = holder;
  tracking.sample_type = format.sample_type;
  tracking.sample_id_all = 1;
  tracking.inherit = 1;
  tracking.comm = 1;
  tracking.comm_exec = 1;
  tracking.task = 1;
  tracking.disabled = enable_on_exec ? 1 : 0;
  tracking.enable_on_exec = enable_on_exec ? 1 : 0;
  // A thread's FORK, COMM and EXIT records take about 150 bytes, its READ records that much per
  // CPU and event: a quarter of the pages suffices, and keeps both rings of a CPU (82 pages at
  // the default 64) within the locked memory an unprivileged user may map per CPU
  // (perf_event_mlock_kb, 516 KiB).
  const size_t names_pages = std::max<size_t>(1, ring_pages / 4);
  std::vector<CounterSideband::CounterId> ids;
  for (size_t c = 0; c < cpus.size(); ++c) {
    NP_ASSIGN_OR_RETURN(const int counts_ring,
                        open_ring(cpus[c], ring_pages, "dummy side-band event"));
    for (size_t e = 0; e < slots_.size(); ++e) {
      Slot& slot = slots_[e];
      for (size_t t = 0; t < tids_.size() && !slot.fds.empty(); ++t) {
        const int counting_fd = slot.fds[t * cpu_count_ + c].get();
        uint64_t id = 0;
        if (::ioctl(counting_fd, PERF_EVENT_IOC_ID, &id) != 0) {
          return ErrnoError(absl::StrCat("PERF_EVENT_IOC_ID(", slot.event.name, ")"));
        }
        NP_RETURN_IF_ERROR(set_output(counting_fd, counts_ring, slot.event.name));
        ids.push_back({.event = e, .owner = t, .id = id});
      }
    }
    NP_ASSIGN_OR_RETURN(const int names_ring,
                        open_ring(cpus[c], names_pages, "dummy thread-name ring"));
    for (const pid_t tid : tids_) {
      absl::StatusOr<ScopedFd> fd =
          OpenPerfEvent(tracking, tid, cpus[c], "dummy thread-name event", -1, open_fn);
      // A thread of an attached process that exited since it was listed names nothing.
      if (!fd.ok() && tid != pid_ && fd.status().code() == absl::StatusCode::kUnavailable) {
        continue;
      }
      if (!fd.ok()) return fd.status();
      NP_RETURN_IF_ERROR(set_output(fd->get(), names_ring, "dummy thread-name event"));
      tracking_fds_.push_back(*std::move(fd));
    }
  }
  sideband_ = std::make_unique<CounterSideband>(events_, cpus.size(), ids);
  sorter_ = std::make_unique<RecordSorter>(format, RecordSorter::RingOrder::kUnordered);
  return absl::OkStatus();
}

absl::Status CounterSet::Enable() {
  for (ScopedFd& fd : tracking_fds_) {
    if (::ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
      return ErrnoError("enable the thread-name event");
    }
  }
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
  for (ScopedFd& fd : tracking_fds_) {
    if (::ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0) != 0) {
      return ErrnoError("disable the thread-name event");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ReadFormatValues> CounterSet::ReadTask(const Slot& slot, size_t task) const {
  ReadFormatValues sum;
  for (size_t c = 0; c < cpu_count_; ++c) {
    uint8_t buf[4 * sizeof(uint64_t)];
    ssize_t n;
    do {
      n = ::read(slot.fds[task * cpu_count_ + c].get(), buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return ErrnoError(absl::StrCat("read counter ", slot.event.name));
    NP_ASSIGN_OR_RETURN(ReadFormatValues r,
                        ParseReadFormat(std::span<const uint8_t>(buf, static_cast<size_t>(n)),
                                        CountingReadFormat(per_thread_)));
    AddCpuPart(r, &sum);
  }
  return sum;
}

absl::StatusOr<std::vector<std::vector<CounterValue>>> CounterSet::ReadEachTask() const {
  std::vector<std::vector<CounterValue>> out(tids_.size());
  for (size_t t = 0; t < tids_.size(); ++t) {
    for (const Slot& slot : slots_) {
      if (slot.fds.empty()) {
        out[t].push_back(UnsupportedCounterValue(slot.event, slot.unsupported_reason));
        continue;
      }
      NP_ASSIGN_OR_RETURN(ReadFormatValues r, ReadTask(slot, t));
      out[t].push_back(MakeCounterValue(slot.event, r.value, r.time_enabled, r.time_running));
    }
  }
  return out;
}

absl::StatusOr<std::vector<CounterValue>> CounterSet::Read() const {
  std::vector<CounterValue> values;
  values.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    if (slot.fds.empty()) {
      values.push_back(UnsupportedCounterValue(slot.event, slot.unsupported_reason));
      continue;
    }
    // Different tasks' times add up (each has its own enabled time).
    ReadFormatValues sum;
    for (size_t t = 0; t < tids_.size(); ++t) {
      NP_ASSIGN_OR_RETURN(ReadFormatValues r, ReadTask(slot, t));
      sum.value += r.value;
      sum.time_enabled += r.time_enabled;
      sum.time_running += r.time_running;
    }
    values.push_back(MakeCounterValue(slot.event, sum.value, sum.time_enabled, sum.time_running));
  }
  return values;
}

void CounterSet::Poll() {
  if (sideband_ == nullptr) return;
  sorter_->Drain(rings_, *sideband_);
}

void CounterSet::NameTasks(const std::vector<std::string>& comms) {
  if (sideband_ == nullptr) return;
  for (size_t t = 0; t < comms.size() && t < tids_.size(); ++t) {
    sideband_->NameTask(tids_[t], comms[t]);
  }
}

absl::StatusOr<std::vector<ThreadCounters>> CounterSet::ReadPerThread() {
  if (!per_thread_ || sideband_ == nullptr) {
    return absl::FailedPreconditionError("counters were not opened per thread");
  }
  // Everything published first, then what a stuck ring holds past its data_head (see
  // RingBuffer::DrainUnpublished), all in time order.
  sorter_->Drain(rings_, *sideband_);
  const SampleFormat format = CounterSidebandFormat();
  size_t recovered = 0;
  for (RingBuffer& ring : rings_) {
    recovered += ring.DrainUnpublished(
        [&format](std::span<const uint8_t> r) { return IsConsistentTaskRecord(r, format); },
        [this](std::span<const uint8_t> r) { sorter_->Hold(r); });
  }
  if (recovered > 0) {
    Logger("sampler")->debug("{} side-band records recovered past data_head", recovered);
  }
  sorter_->Flush(rings_, *sideband_);
  NP_ASSIGN_OR_RETURN(std::vector<std::vector<CounterValue>> totals, ReadEachTask());
  return sideband_->Build(totals, pid_, tids_);
}

size_t CounterSet::incomplete_tasks() const {
  return sideband_ != nullptr ? sideband_->incomplete_tasks() : 0;
}

uint64_t CounterSet::lost_records() const {
  return sideband_ != nullptr ? sideband_->lost() : 0;
}

}  // namespace nativeprof::sampler
