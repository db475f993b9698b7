#include "library/self_profiler.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "output/counter_report.h"
#include "output/profile_writer.h"
#include "sampler/record_loop.h"
#include "sampler/target.h"
#include "symbolize/profile_builder.h"
#include "symbolize/symbolizer.h"

namespace nativeprof::library {
namespace {

constexpr uint64_t kGo = 1;

// One running profiler per process: a second one would sample the first one's reader thread
// (created from a sampled thread, so inherited) and double every sample's cost.
std::atomic<bool> g_running{false};

bool SameMaps(const std::vector<sampler::ProcMapsEntry>& a,
              const std::vector<sampler::ProcMapsEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& x = a[i];
    const auto& y = b[i];
    if (x.start_avma != y.start_avma || x.end_avma != y.end_avma || x.prot != y.prot ||
        x.file_offset != y.file_offset || x.inode != y.inode || x.path != y.path) {
      return false;
    }
  }
  return true;
}

// Adds `from` into `into` (same event): counts of different threads and segments are summed.
void Accumulate(const sampler::CounterValue& from, sampler::CounterValue& into) {
  if (!from.supported) {
    if (into.unsupported_reason.empty()) into.unsupported_reason = from.unsupported_reason;
    return;
  }
  into.supported = true;
  into.unsupported_reason.clear();
  into.counted = into.counted || from.counted;
  into.raw += from.raw;
  into.scaled += from.scaled;
  into.time_enabled += from.time_enabled;
  into.time_running += from.time_running;
}

uint64_t ReadEventFd(int fd) {
  uint64_t value = 0;
  while (::read(fd, &value, sizeof(value)) < 0 && errno == EINTR) {
  }
  return value;
}

void WriteEventFd(int fd, uint64_t value) {
  while (::write(fd, &value, sizeof(value)) < 0 && errno == EINTR) {
  }
}

// A writer's failure past the state checks is the file's: a directory where it goes, a parent
// that is a file, no room. errno's usual class (EISDIR and ENOTDIR read as a failed
// precondition) would have the C API call it NP_ERROR_BAD_STATE, the profiler's state.
absl::Status AsFileFailure(absl::Status st) {
  if (st.ok()) return st;
  return absl::UnavailableError(st.message());
}

// A fallback the session made (cycles sampled as cpu-clock, kernel stacks dropped) is said on
// stderr once per process and note, as `record` says it once per run: a benchmark harness starts
// a profiler for every benchmark.
void SayNotesOnce(const std::vector<std::string>& notes) {
  static std::mutex mu;
  static std::vector<std::string>* said = new std::vector<std::string>();  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  for (const std::string& note : notes) {
    if (std::find(said->begin(), said->end(), note) != said->end()) continue;
    said->push_back(note);
    std::fprintf(stderr, "nativeprof: %s\n", note.c_str());
  }
}

}  // namespace

std::vector<sampler::EventSpec> LibraryCounterEvents() {
  std::vector<sampler::EventSpec> events;
  for (const char* name : {"task-clock", "page-faults", "context-switches", "cpu-migrations",
                           "cycles", "instructions", "cache-references", "cache-misses"}) {
    absl::StatusOr<sampler::EventSpec> e = sampler::ParseEventSpec(name);
    if (e.ok()) events.push_back(*std::move(e));
  }
  return events;
}

absl::StatusOr<std::unique_ptr<SelfProfiler>> SelfProfiler::Create(
    const SelfProfilerOptions& options) {
  if (!options.sample && !options.count) {
    return absl::InvalidArgumentError("neither sampling nor counting is enabled");
  }
  if (options.sample && (options.frequency_hz == 0 || options.frequency_hz > 100000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling frequency ", options.frequency_hz, " Hz is outside 1..100000"));
  }
  std::unique_ptr<SelfProfiler> p(new SelfProfiler(options));
  if (p->options_.counter_events.empty()) p->options_.counter_events = LibraryCounterEvents();
  NP_ASSIGN_OR_RETURN(p->unwinder_, unwind::MakeUnwinder(options.call_graph,
                                                         unwind::DwarfBackend::kNative));
  p->collector_ = std::make_unique<unwind::StackCollector>(p->unwinder_.get(),
                                                           /*keep_timeline=*/false);
  p->symbolizer_ = symbolize::MakeMappingAwareSymbolizer(*p->collector_, {});
  p->ready_fd_.Reset(::eventfd(0, EFD_CLOEXEC));
  // A semaphore: Start's go and Stop's stop are read one at a time even when the reader thread
  // starts late and finds both (a plain eventfd would add them into one value).
  p->control_fd_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE));
  if (!p->ready_fd_.valid() || !p->control_fd_.valid()) return ErrnoError("eventfd");
  for (const sampler::EventSpec& e : p->options_.counter_events) {
    sampler::CounterValue v;
    v.event = e;
    p->counter_totals_.push_back(std::move(v));
  }
  return p;
}

SelfProfiler::~SelfProfiler() {
  if (running_) (void)Stop();
}

absl::Status SelfProfiler::OpenCounters(const std::vector<pid_t>& tids) {
  sampler::CounterOptions counter_options;
  counter_options.enable_on_exec = false;
  counter_options.inherit = true;
  for (pid_t tid : tids) {
    absl::StatusOr<sampler::CounterSet> set =
        sampler::CounterSet::Open(options_.counter_events, tid, counter_options);
    if (set.ok()) {
      counter_sets_.push_back(*std::move(set));
    } else if (!absl::IsUnavailable(set.status())) {
      // A thread that exited since it was listed is not an error; anything else is.
      return set.status();
    }
  }
  return absl::OkStatus();
}

absl::Status SelfProfiler::Start() {
  if (running_) return absl::FailedPreconditionError("the profiler is already running");
  profile_.reset();
  if (g_running.exchange(true)) {
    return absl::FailedPreconditionError(
        "another nativeprof profiler is running in this process; stop it first");
  }
  notes_.clear();
  abandon_segment_.store(false, std::memory_order_relaxed);
  // The reader exists before any event is opened, so no inherited event ever follows it.
  try {
    reader_ = std::thread([this] { ReaderThread(); });
  } catch (const std::system_error& e) {
    g_running = false;
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create nativeprof's reader thread: ", e.what()));
  }
  const pid_t reader_tid = static_cast<pid_t>(ReadEventFd(ready_fd_.get()));

  auto fail = [this](absl::Status st) {
    abandon_segment_.store(true, std::memory_order_release);
    WriteEventFd(control_fd_.get(), kGo);
    reader_.join();
    session_.reset();
    counter_sets_.clear();
    g_running = false;
    return st;
  };

  const pid_t self_pid = ::getpid();
  const pid_t self_tid = ::gettid();
  absl::StatusOr<std::vector<pid_t>> listed = sampler::ListThreads(self_pid);
  if (!listed.ok()) return fail(listed.status());
  // The calling thread first: it is certainly alive, and Session probes with targets[0].
  std::vector<pid_t> tids = {self_tid};
  for (pid_t tid : *listed) {
    if (tid != self_tid && tid != reader_tid) tids.push_back(tid);
  }

  if (options_.sample) {
    sampler::SessionOptions so;
    so.sampling.event = options_.event;
    so.sampling.frequency_hz = options_.frequency_hz;
    so.sampling.include_kernel = options_.include_kernel;
    so.sampling.inherit = true;
    so.sampling.enable_on_exec = false;
    unwind::RequestSampleFields(options_.call_graph, options_.dwarf_stack_bytes, &so.sampling);
    so.targets = tids;
    so.ring_pages = options_.ring_pages;
    absl::StatusOr<std::unique_ptr<sampler::Session>> session = sampler::Session::Open(so);
    if (!session.ok()) return fail(session.status());
    session_ = *std::move(session);
    notes_ = session_->notes();
    SayNotesOnce(notes_);
  }
  if (options_.count) {
    if (absl::Status st = OpenCounters(tids); !st.ok()) return fail(st);
  }
  if (session_ != nullptr) {
    if (absl::Status st = session_->Enable(); !st.ok()) return fail(st);
  }
  running_ = true;
  segment_start_ = std::chrono::steady_clock::now();
  WriteEventFd(control_fd_.get(), kGo);
  return absl::OkStatus();
}

void SelfProfiler::ReaderThread() {
  // Process-directed signals must go to the host's threads, never to this one.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "nativeprof-rd");
  WriteEventFd(ready_fd_.get(), static_cast<uint64_t>(::gettid()));
  if (ReadEventFd(control_fd_.get()) != kGo ||
      abandon_segment_.load(std::memory_order_acquire)) {
    return;
  }

  // The kernel reports only mappings made after the events were enabled: the address space and
  // thread names as they are now come from /proc (re-sent only when they changed since the last
  // segment, which keeps a start/stop cycle cheap).
  if (session_ != nullptr) {
    const pid_t pid = ::getpid();
    absl::StatusOr<std::vector<sampler::ProcMapsEntry>> maps = sampler::ReadProcMaps(pid);
    absl::StatusOr<std::vector<pid_t>> threads = sampler::ListThreads(pid);
    if (maps.ok() && threads.ok() &&
        (!SameMaps(*maps, last_maps_) || *threads != last_threads_)) {
      sampler::SynthesizeProcessState(pid, *maps, *collector_);
      last_maps_ = *std::move(maps);
      last_threads_ = *std::move(threads);
    }
  }

  // Until Stop writes control_fd_ again. Counting only, there is nothing to drain and the loop
  // just waits. Stop disabled the events before that write, so the loop's final drain sees the
  // segment's last records. No signals are read: they are the host's.
  sampler::SelfTarget target(control_fd_.get());
  sampler::RecordLoopOptions loop;
  loop.session = session_.get();
  loop.sink = collector_.get();
  (void)sampler::RunRecordLoop(target, loop);  // a SelfTarget always starts
}

absl::Status SelfProfiler::Stop() {
  if (!running_) return absl::FailedPreconditionError("the profiler is not running");
  absl::Status status;
  if (session_ != nullptr) status = session_->Disable();
  for (sampler::CounterSet& set : counter_sets_) {
    if (absl::Status st = set.Disable(); !st.ok() && status.ok()) status = st;
  }
  WriteEventFd(control_fd_.get(), kGo);
  reader_.join();
  running_ = false;
  elapsed_ += std::chrono::steady_clock::now() - segment_start_;
  for (const sampler::CounterSet& set : counter_sets_) {
    absl::StatusOr<std::vector<sampler::CounterValue>> values = set.Read();
    if (!values.ok()) {
      if (status.ok()) status = values.status();
      continue;
    }
    for (size_t i = 0; i < values->size() && i < counter_totals_.size(); ++i) {
      Accumulate((*values)[i], counter_totals_[i]);
    }
  }
  counter_sets_.clear();
  session_.reset();
  g_running = false;
  return status;
}

absl::Status SelfProfiler::Reset() {
  if (running_) return absl::FailedPreconditionError("stop the profiler before resetting it");
  profile_.reset();
  collector_ = std::make_unique<unwind::StackCollector>(unwinder_.get(), /*keep_timeline=*/false);
  symbolizer_ = symbolize::MakeMappingAwareSymbolizer(*collector_, {});
  last_maps_.clear();
  last_threads_.clear();
  elapsed_ = {};
  for (sampler::CounterValue& v : counter_totals_) {
    sampler::CounterValue fresh;
    fresh.event = v.event;
    v = std::move(fresh);
  }
  return absl::OkStatus();
}

absl::Status SelfProfiler::Write(const std::string& path) {
  return WriteAs(path, output::FormatFromPath(path));
}

absl::Status SelfProfiler::WriteFolded(const std::string& path) {
  return WriteAs(path, output::OutputFormat::kFolded);
}

absl::Status SelfProfiler::WriteAs(const std::string& path, output::OutputFormat format) {
  if (running_) return absl::FailedPreconditionError("stop the profiler before writing");
  if (!options_.sample) return absl::FailedPreconditionError("sampling is off for this profiler");
  if (!profile_.has_value()) {
    symbolize::ProfileBuildOptions build;
    build.event = options_.event.name;
    build.weight_unit = "samples";
    build.sample_frequency_hz = options_.frequency_hz;
    profile_ = symbolize::BuildProfile(*collector_, *symbolizer_, build);
  }
  return AsFileFailure(output::WriteProfile(*profile_, path, format, {}));
}

absl::Status SelfProfiler::WriteCounters(const std::string& path) {
  NP_ASSIGN_OR_RETURN(std::vector<sampler::CounterValue> values, Counters());
  const double seconds = std::chrono::duration<double>(elapsed_).count();
  return AsFileFailure(WriteFileAtomically(path, output::FormatCounterTable(values, seconds)));
}

absl::StatusOr<std::vector<sampler::CounterValue>> SelfProfiler::Counters() const {
  if (running_) return absl::FailedPreconditionError("stop the profiler before reading counters");
  if (!options_.count) return absl::FailedPreconditionError("counting is off for this profiler");
  return counter_totals_;
}

uint64_t SelfProfiler::samples() const { return collector_->stats().samples; }

uint64_t SelfProfiler::lost() const {
  return collector_->stats().lost_records + collector_->stats().lost_samples;
}

}  // namespace nativeprof::library
