#include "sampler/session.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "sampler/counter_value.h"
#include "sampler/cpu_list.h"

namespace nativeprof::sampler {

size_t Session::DefaultRingPages(size_t rings) {
  absl::StatusOr<int64_t> mlock_kb = ReadIntegerFile("/proc/sys/kernel/perf_event_mlock_kb");
  const size_t limit = static_cast<size_t>(mlock_kb.ok() && *mlock_kb > 0 ? *mlock_kb : 516) * 1024;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t pages = 8;
  while (pages < 256 && rings * (pages * 2 + 1) * page <= limit) pages *= 2;
  return pages;
}

size_t Session::UnlimitedDwarfRingPages(size_t rings, bool switch_samples) {
  // Switch samples come in bursts (a build starting its compilers switches thousands of times in
  // a few milliseconds), each with its stack copy: their rings are twice as large.
  const size_t total_bytes = (switch_samples ? size_t{16} : size_t{8}) << 20;
  const size_t max_ring_bytes = (switch_samples ? size_t{4} : size_t{2}) << 20;
  constexpr size_t kMinRingBytes = size_t{512} << 10;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  rings = std::max<size_t>(rings, 1);
  size_t bytes = kMinRingBytes;
  while (bytes < max_ring_bytes && rings * bytes * 2 <= total_bytes) bytes *= 2;
  return std::max<size_t>(bytes / page, 8);
}

uint32_t Session::WakeupBytes(size_t ring_bytes) {
  constexpr size_t kHalfFrom = size_t{1} << 20;
  return static_cast<uint32_t>(ring_bytes >= kHalfFrom ? ring_bytes / 2 : ring_bytes / 4);
}

// Sets SampleView::event from the sample's id before passing records on: both events share a
// ring, and only the id tells a switch sample from a CPU sample. Also counts the losses the
// rings reported, which Flush compares with the events' own counts.
class Session::EventTagger final : public RecordSink {
 public:
  EventTagger(const std::vector<uint64_t>& switch_ids, AllocStackDecoder* alloc_stacks,
              uint64_t& reported_lost, RecordSink& sink)
      : switch_ids_(switch_ids),
        alloc_stacks_(alloc_stacks),
        reported_lost_(reported_lost),
        sink_(sink) {}
  void OnSample(const SampleView& sample) override {
    SampleView tagged = sample;
    OnParsedSample(tagged);
  }
  void OnParsedSample(SampleView& sample) override {
    if (sample.id == alloc_channel::kAllocSampleId ||
        sample.id == alloc_channel::kAllocDeltaSampleId) {
      sample.event = SampleEvent::kAlloc;
      if (alloc_stacks_ != nullptr) alloc_stacks_->OnAlloc(sample);
    } else if (sample.id == alloc_channel::kFreeSampleId) {
      sample.event = SampleEvent::kFree;
    } else if (sample.id == alloc_channel::kPeakMarkSampleId) {
      sample.event = SampleEvent::kPeakMark;
    } else if (std::binary_search(switch_ids_.begin(), switch_ids_.end(), sample.id)) {
      sample.event = SampleEvent::kContextSwitch;
    }
    sink_.OnSample(sample);
  }
  void OnMmap(const MmapView& mmap) override { sink_.OnMmap(mmap); }
  void OnComm(const CommView& comm) override { sink_.OnComm(comm); }
  void OnTask(const TaskView& task) override {
    if (task.exit && alloc_stacks_ != nullptr) alloc_stacks_->OnThreadExit(task.pid, task.tid);
    sink_.OnTask(task);
  }
  void OnLost(const LostView& lost) override {
    if (!lost.samples_only) reported_lost_ += lost.lost;
    sink_.OnLost(lost);
  }
  void OnThrottle(const ThrottleView& throttle) override { sink_.OnThrottle(throttle); }
  void OnRead(const ReadView& read) override { sink_.OnRead(read); }
  void OnSwitch(const SwitchView& sw) override { sink_.OnSwitch(sw); }

 private:
  const std::vector<uint64_t>& switch_ids_;
  AllocStackDecoder* alloc_stacks_;  // null without --alloc
  uint64_t& reported_lost_;
  RecordSink& sink_;
};

absl::StatusOr<std::unique_ptr<Session>> Session::Open(const SessionOptions& options) {
  if (options.targets.empty()) return absl::InvalidArgumentError("no task to profile");
  std::unique_ptr<Session> session(new Session());
  NP_RETURN_IF_ERROR(session->OpenAll(options));
  return session;
}

absl::Status Session::OpenAll(const SessionOptions& options) {
  const std::vector<int> cpus = OnlineCpus();
  SamplingAttrOptions sampling = options.sampling;
  event_ = sampling.event;
  ring_pages_ = options.ring_pages != 0 ? options.ring_pages : DefaultRingPages(cpus.size());
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (sampling.wakeup_bytes == 0) {
    sampling.wakeup_bytes = WakeupBytes(ring_pages_ * page);
  }

  // Probe with the first (task, CPU) pair and degrade on purpose, as perf does: an unsupported
  // hardware event becomes cpu-clock; kernel sampling that paranoia forbids becomes user-only;
  // a kernel without MMAP2 build-ids (< 5.12) gets plain MMAP2, and one without use_clockid
  // (< 4.1) the perf clock.
  // The lead task's events own the rings. Attached threads may exit while they are opened (a
  // main thread that called pthread_exit is a zombie from the start): the first one that still
  // exists leads, and any other that is gone is skipped below.
  size_t lead = 0;
  absl::StatusOr<ScopedFd> first;
  while (true) {
    attr_ = MakeSamplingAttr(sampling);
    first = OpenPerfEvent(attr_, options.targets[lead], cpus[0], sampling.event.name, -1,
                          options.open_fn);
    if (first.ok()) break;
    if (absl::IsUnavailable(first.status()) && lead + 1 < options.targets.size()) {
      ++lead;
      continue;
    }
    if (absl::IsNotFound(first.status()) && sampling.event.hardware) {
      notes_.push_back(absl::StrCat(sampling.event.name,
                                    " is not supported on this machine (no PMU access); "
                                    "sampling cpu-clock instead"));
      sampling.event = CpuClockEvent();
      event_ = sampling.event;
      continue;
    }
    if (absl::IsPermissionDenied(first.status()) && sampling.include_kernel) {
      notes_.push_back(absl::StrCat("kernel stacks are not sampled: ", PerfPermissionAdvice()));
      sampling.include_kernel = false;
      kernel_sampled_ = false;
      continue;
    }
    if (absl::IsInvalidArgument(first.status()) && sampling.count_lost) {
      sampling.count_lost = false;
      continue;
    }
    if (absl::IsInvalidArgument(first.status()) && sampling.build_id) {
      sampling.build_id = false;
      continue;
    }
    if (absl::IsInvalidArgument(first.status()) && sampling.monotonic_clock) {
      sampling.monotonic_clock = false;
      continue;
    }
    return first.status();
  }
  if (sampling.off_cpu) {
    switch_attr_ = MakeContextSwitchAttr(sampling);
    absl::StatusOr<ScopedFd> probe = OpenPerfEvent(switch_attr_, options.targets[lead], cpus[0],
                                                   "context-switches", -1, options.open_fn);
    if (absl::IsPermissionDenied(probe.status())) {
      return absl::PermissionDeniedError(absl::StrCat(
          "--off-cpu samples context switches, which happen in the kernel and need kernel-side "
          "events: ",
          PerfPermissionAdvice()));
    }
    if (!probe.ok()) return probe.status();
  }
  if (options.alloc_channel != nullptr) {
    alloc_stacks_ = std::make_unique<AllocStackDecoder>(attr_.sample_regs_user,
                                                        attr_.sample_stack_user);
  }
  sorter_ = std::make_unique<RecordSorter>(SampleFormat::FromAttr(attr_),
                                           RecordSorter::RingOrder::kTimeOrdered);

  for (size_t c = 0; c < cpus.size(); ++c) {
    ScopedFd fd;
    if (c == 0) {
      fd = std::move(*first);
    } else {
      NP_ASSIGN_OR_RETURN(fd, OpenPerfEvent(attr_, options.targets[lead], cpus[c], event_.name,
                                            -1, options.open_fn));
    }
    NP_ASSIGN_OR_RETURN(RingBuffer ring, RingBuffer::Map(fd.get(), ring_pages_, cpus.size()));
    rings_.push_back(std::move(ring));
    ring_poll_fds_.push_back(fd.get());
    fds_.push_back(std::move(fd));
  }
  if (options.alloc_channel != nullptr) {
    // The preload writes in this session's final layout, after every fallback above.
    alloc_channel_ = options.alloc_channel;
    alloc_channel_->Configure(attr_);
    rings_.push_back(alloc_channel_->Ring());
    ring_poll_fds_.push_back(alloc_channel_->wake_fd());
  }
  if (sampling.off_cpu) {
    NP_RETURN_IF_ERROR(OpenSwitchEvents(options.targets[lead], cpus, options.open_fn));
  }
  // Further tasks share the CPU's ring.
  for (size_t t = lead + 1; t < options.targets.size(); ++t) {
    for (size_t c = 0; c < cpus.size(); ++c) {
      absl::StatusOr<ScopedFd> fd =
          OpenPerfEvent(attr_, options.targets[t], cpus[c], event_.name, -1, options.open_fn);
      if (!fd.ok()) {
        // A thread that exited between listing and opening is not an error.
        if (absl::IsUnavailable(fd.status())) break;
        return fd.status();
      }
      if (::ioctl(fd->get(), PERF_EVENT_IOC_SET_OUTPUT, fds_[c].get()) != 0) {
        return absl::InternalError(absl::StrCat("PERF_EVENT_IOC_SET_OUTPUT: ", strerror(errno)));
      }
      fds_.push_back(*std::move(fd));
    }
    if (sampling.off_cpu) {
      absl::Status st = OpenSwitchEvents(options.targets[t], cpus, options.open_fn);
      if (!st.ok() && !absl::IsUnavailable(st)) return st;
    }
  }
  std::sort(switch_ids_.begin(), switch_ids_.end());
  Logger("sampler")->info("sampling {} at {} Hz on {} CPUs, {} data pages per ring", event_.name,
                          sampling.frequency_hz, cpus.size(), ring_pages_);
  return absl::OkStatus();
}

absl::Status Session::OpenSwitchEvents(pid_t target, const std::vector<int>& cpus,
                                       const PerfEventOpenFn& open_fn) {
  for (size_t c = 0; c < cpus.size(); ++c) {
    NP_ASSIGN_OR_RETURN(ScopedFd fd, OpenPerfEvent(switch_attr_, target, cpus[c],
                                                   "context-switches", -1, open_fn));
    if (::ioctl(fd.get(), PERF_EVENT_IOC_SET_OUTPUT, fds_[c].get()) != 0) {
      return absl::InternalError(absl::StrCat("PERF_EVENT_IOC_SET_OUTPUT: ", strerror(errno)));
    }
    NP_RETURN_IF_ERROR(AddSwitchEvent(std::move(fd)));
  }
  return absl::OkStatus();
}

absl::Status Session::AddSwitchEvent(ScopedFd fd) {
  // Inherited copies report their parent's id (primary_event_id), so these ids cover every
  // thread and child the targets create.
  uint64_t id = 0;
  if (::ioctl(fd.get(), PERF_EVENT_IOC_ID, &id) != 0) {
    return absl::InternalError(absl::StrCat("PERF_EVENT_IOC_ID: ", strerror(errno)));
  }
  switch_ids_.push_back(id);
  fds_.push_back(std::move(fd));
  return absl::OkStatus();
}

absl::Status Session::Enable() {
  for (const ScopedFd& fd : fds_) {
    if (::ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
      return absl::InternalError(absl::StrCat("PERF_EVENT_IOC_ENABLE: ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::Status Session::Disable() {
  for (const ScopedFd& fd : fds_) {
    if (::ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0) != 0) {
      return absl::InternalError(absl::StrCat("PERF_EVENT_IOC_DISABLE: ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

bool Session::Poll(std::span<pollfd> extra, int timeout_ms) {
  pollfds_.clear();
  hung_up_.resize(rings_.size());
  for (size_t i = 0; i < rings_.size(); ++i) {
    // poll() skips a negative fd; a hung-up ring is drained on the timeout instead.
    pollfds_.push_back({hung_up_[i] ? -1 : ring_poll_fds_[i], POLLIN, 0});
  }
  for (const pollfd& p : extra) pollfds_.push_back({p.fd, p.events, 0});
  int n = ::poll(pollfds_.data(), pollfds_.size(), timeout_ms);
  for (size_t i = 0; i < rings_.size() && n > 0; ++i) {
    // The event that owns a ring reports POLLHUP for good once its task exited with no inherited
    // copies left (perf_poll, is_event_hup), even while other tasks still write into the ring
    // through SET_OUTPUT. Polling it again would return at once, every time: a busy loop, which
    // at real-time priority would take a whole CPU from the target.
    if (pollfds_[i].revents & (POLLHUP | POLLERR)) hung_up_[i] = true;
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    extra[i].revents = n > 0 ? pollfds_[rings_.size() + i].revents : 0;
  }
  return !(n < 0 && errno == EINTR);
}

void Session::Drain(RecordSink& sink) { Sort(sink, /*flush=*/false); }

void Session::Flush(RecordSink& sink) { Sort(sink, /*flush=*/true); }

void Session::Sort(RecordSink& sink, bool flush) {
  EventTagger tagger(switch_ids_, alloc_stacks_.get(), reported_lost_, sink);
  if (flush) {
    sorter_->Flush(rings_, tagger);
    ReportUnreportedLosses(sink);
  } else {
    sorter_->Drain(rings_, tagger);
  }
  if (alloc_channel_ != nullptr) alloc_channel_->AfterDrain(/*last=*/flush);
  AddRingStats();
}

void Session::ReportUnreportedLosses(RecordSink& sink) {
  if (!(attr_.read_format & PERF_FORMAT_LOST)) return;  // a kernel before 6.0
  // Every record a ring could not take counts once in the ring's next PERF_RECORD_LOST and once
  // in the event that wrote it. The copies of an inherited event keep their counts when their
  // tasks exit, so the events' sum can fall short of what the rings lost, never exceed it.
  uint64_t counted = 0;
  for (const ScopedFd& fd : fds_) {
    uint8_t buf[sizeof(ReadFormatValues)];  // room for every field read_format can ask for
    ssize_t n;
    do {
      n = ::read(fd.get(), buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) continue;  // an event in an error state reads as 0 bytes
    absl::StatusOr<ReadFormatValues> values = ParseReadFormat(
        std::span<const uint8_t>(buf, static_cast<size_t>(n)), attr_.read_format);
    if (values.ok()) counted += values->lost;
  }
  if (counted <= reported_lost_) return;
  const uint64_t unreported = counted - reported_lost_;
  Logger("sampler")->debug("{} records lost that no ring reported (still full when sampling "
                           "stopped)", unreported);
  reported_lost_ = counted;
  sink.OnLost(LostView{.lost = unreported});
}

void Session::AddRingStats() {
  for (RingBuffer& ring : rings_) {
    RingBuffer::DrainStats s = ring.TakeStats();
    stats_.records += s.records;
    stats_.bytes += s.bytes;
    stats_.corrupt_batches += s.corrupt;
  }
  stats_.parse_errors = sorter_->parse_errors();
  if (alloc_stacks_ != nullptr) stats_.undecodable_alloc_stacks = alloc_stacks_->undecodable();
  stats_.peak_held_bytes = sorter_->peak_held_bytes();
}

}  // namespace nativeprof::sampler
