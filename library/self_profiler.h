// The engine behind libnativeprof (include/nativeprof/*.h): profiles the calling process itself.
// Start() creates a reader thread first, then opens sampling events (with inherit) on every other
// thread of the process, so the reader never samples itself while threads created later are
// followed. Samples accumulate across Start/Stop pairs until Reset(). The host's threads run no
// nativeprof code while sampling (no signal handlers, no allocation): draining, unwinding and the
// synthesized /proc/self/maps state all happen on the reader thread. Every public method is
// called by the host under one external lock (the C API holds it); not thread-safe on its own.
#ifndef NATIVEPROF_LIBRARY_SELF_PROFILER_H_
#define NATIVEPROF_LIBRARY_SELF_PROFILER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "output/profile_writer.h"
#include "sampler/counter_set.h"
#include "sampler/counter_value.h"
#include "sampler/event_spec.h"
#include "sampler/proc_maps.h"
#include "sampler/session.h"
#include "symbolize/profile.h"
#include "symbolize/symbolizer.h"
#include "unwind/dwarf_stack_size.h"
#include "unwind/stack_collector.h"
#include "unwind/unwinder.h"

namespace nativeprof::library {

struct SelfProfilerOptions {
  bool sample = true;  // collect stacks
  bool count = true;   // count `counter_events`
  sampler::EventSpec event = sampler::CpuClockEvent();
  uint64_t frequency_hz = 999;
  bool include_kernel = true;  // falls back to user-only when perf_event_paranoid forbids it
  unwind::CallGraphMode call_graph = unwind::CallGraphMode::kFramePointer;
  uint32_t dwarf_stack_bytes = unwind::kDefaultDwarfStackSize;
  size_t ring_pages = 0;  // 0: Session::DefaultRingPages
  std::vector<sampler::EventSpec> counter_events = {};  // empty: LibraryCounterEvents()
};

// task-clock, page-faults, context-switches, cpu-migrations, cycles, instructions,
// cache-references, cache-misses: what IPC, cache-miss rate, faults and switches need.
std::vector<sampler::EventSpec> LibraryCounterEvents();

class SelfProfiler {
 public:
  // Errors: kInvalidArgument (nothing to do: neither sample nor count; bad frequency);
  // kUnimplemented for a call-graph mode this build lacks.
  static absl::StatusOr<std::unique_ptr<SelfProfiler>> Create(const SelfProfilerOptions& options);
  ~SelfProfiler();  // stops first if running

  // Begins a segment. Errors: kFailedPrecondition if this or another SelfProfiler of the process
  // is running; those of Session::Open
  // and CounterSet::Open (kPermissionDenied, kNotFound for an unsupported event,
  // kResourceExhausted when out of fds), with nothing left open.
  absl::Status Start();
  // Ends the segment: disables the events, joins the reader after its last drain, adds the
  // segment's counts to the totals and closes every fd. Errors: kFailedPrecondition if not running.
  absl::Status Stop();
  // Forgets every sample and counter total. Errors: kFailedPrecondition while running.
  absl::Status Reset();

  // Symbolizes what was collected since the last Reset and writes it to `path` atomically, in
  // the format its name selects (output::FormatFromPath, as `record -o` does: .folded, .svg,
  // .pb.gz, .speedscope.json, anything else folded). Errors: kFailedPrecondition while running
  // or when sampling is off; those of output::WriteProfile (errno codes of the write).
  absl::Status Write(const std::string& path);
  // Write, always as folded stacks whatever the name.
  absl::Status WriteFolded(const std::string& path);
  // Writes the counter totals since the last Reset as the table `record` prints (rows with
  // derived metrics, "<not supported>" for events the kernel cannot count), atomically. Rates
  // are per second of task-clock, else of the summed wall time of the segments. Errors:
  // kFailedPrecondition while running or when counting is off; the write's errno codes.
  absl::Status WriteCounters(const std::string& path);

  // Totals since the last Reset, one per counter event in order (unsupported ones with
  // supported == false). Errors: kFailedPrecondition while running or when counting is off.
  absl::StatusOr<std::vector<sampler::CounterValue>> Counters() const;

  bool running() const { return running_; }
  uint64_t samples() const;
  uint64_t lost() const;
  // Notes from the last Start (fallbacks such as "kernel stacks are not sampled: ...").
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  explicit SelfProfiler(const SelfProfilerOptions& options) : options_(options) {}
  absl::Status OpenCounters(const std::vector<pid_t>& tids);
  void ReaderThread();
  absl::Status WriteAs(const std::string& path, output::OutputFormat format);

  SelfProfilerOptions options_;
  std::unique_ptr<unwind::Unwinder> unwinder_;
  std::unique_ptr<unwind::StackCollector> collector_;
  // Made with collector_ and told of its mappings as they come, as record's is.
  std::unique_ptr<symbolize::Symbolizer> symbolizer_;
  std::unique_ptr<sampler::Session> session_;
  std::vector<sampler::CounterSet> counter_sets_;  // one per thread alive at Start
  std::vector<sampler::CounterValue> counter_totals_;
  // Wall time of the segments since the last Reset, and when the current one started.
  std::chrono::steady_clock::duration elapsed_{};
  std::chrono::steady_clock::time_point segment_start_;
  std::vector<std::string> notes_;
  bool running_ = false;
  // The symbolized samples, built by the first write after Stop (symbolizing is most of a
  // write's cost, and a benchmark hook writes folded, SVG and more of one segment); Start and
  // Reset drop it, since they change what there is to write.
  std::optional<symbolize::Profile> profile_;

  // The reader thread of the current segment and its two eventfds (kept for the profiler's
  // lifetime): the reader posts its tid on ready_fd_; control_fd_ (a semaphore) carries kGo once
  // the events are enabled (or at once, with abandon_segment_, when Start failed), then kGo
  // again to end the poll loop.
  std::thread reader_;
  ScopedFd ready_fd_;
  ScopedFd control_fd_;
  // Set by a Start that failed after creating the reader: its go means "exit".
  std::atomic<bool> abandon_segment_{false};
  // The process state last synthesized into the collector; re-sent only when it changed.
  std::vector<sampler::ProcMapsEntry> last_maps_;
  std::vector<pid_t> last_threads_;
};

}  // namespace nativeprof::library

#endif  // NATIVEPROF_LIBRARY_SELF_PROFILER_H_
