// libnativeprof C++ API: nativeprof::Profiler and the RAII ScopedProfile, profiling the calling
// process from inside it. Header-only over the C API in nativeprof/nativeprof.h, so the shared
// library's ABI stays the C one; errors come back as absl::Status / absl::StatusOr (link
// absl::status and absl::statusor, which the CMake package and the pkg-config file do for you).
// A Profiler may be used from any thread (calls are serialized inside the library).
#ifndef NATIVEPROF_INCLUDE_NATIVEPROF_PROFILER_H_
#define NATIVEPROF_INCLUDE_NATIVEPROF_PROFILER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nativeprof/nativeprof.h"

namespace nativeprof {

struct ProfilerOptions {
  bool sample = true;             // collect stacks
  bool count = true;              // count counter_events
  std::string event = "cpu-clock";
  uint32_t frequency_hz = 999;
  bool include_kernel = true;
  bool dwarf = false;             // DWARF unwinding instead of frame pointers
  uint32_t ring_pages = 0;        // 0: automatic
  std::string counter_events;     // comma-separated; empty: the library's default list
};

struct CounterReading {
  std::string name;
  double value = 0;
  bool supported = false;
};

// Counter totals with the derived figures; every accessor returns nullopt when an input is not
// supported here (never a made-up 0).
struct CounterSnapshot {
  std::vector<CounterReading> readings;

  std::optional<double> Get(const std::string& name) const {
    for (const CounterReading& r : readings) {
      if (r.name == name) return r.supported ? std::optional<double>(r.value) : std::nullopt;
    }
    return std::nullopt;
  }
  // Instructions per cycle.
  std::optional<double> Ipc() const { return Ratio("instructions", "cycles"); }
  // cache-misses / cache-references, 0..1.
  std::optional<double> CacheMissRate() const { return Ratio("cache-misses", "cache-references"); }
  std::optional<double> PageFaults() const { return Get("page-faults"); }
  std::optional<double> ContextSwitches() const { return Get("context-switches"); }

  // Per-event difference `*this - before` (for measuring one region of a longer profile).
  CounterSnapshot Minus(const CounterSnapshot& before) const {
    CounterSnapshot d = *this;
    for (CounterReading& r : d.readings) {
      std::optional<double> b = before.Get(r.name);
      if (b.has_value()) r.value -= *b;
    }
    return d;
  }

 private:
  std::optional<double> Ratio(const char* num, const char* den) const {
    std::optional<double> n = Get(num), d = Get(den);
    if (!n.has_value() || !d.has_value() || *d <= 0) return std::nullopt;
    return *n / *d;
  }
};

namespace internal {
inline absl::Status ToStatus(np_status s) {
  switch (s) {
    case NP_OK: return absl::OkStatus();
    case NP_ERROR_INVALID_ARGUMENT: return absl::InvalidArgumentError(np_last_error());
    case NP_ERROR_PERMISSION_DENIED: return absl::PermissionDeniedError(np_last_error());
    case NP_ERROR_NOT_SUPPORTED: return absl::NotFoundError(np_last_error());
    case NP_ERROR_BAD_STATE: return absl::FailedPreconditionError(np_last_error());
    case NP_ERROR_IO: return absl::UnavailableError(np_last_error());
    case NP_ERROR_RESOURCE_EXHAUSTED: return absl::ResourceExhaustedError(np_last_error());
    default: return absl::InternalError(np_last_error());
  }
}
}  // namespace internal

class Profiler {
 public:
  // Errors: kInvalidArgument (unknown event name, bad frequency, nothing enabled).
  static absl::StatusOr<Profiler> Create(const ProfilerOptions& options = ProfilerOptions()) {
    np_options o;
    np_options_init(&o);
    o.sample = options.sample;
    o.count = options.count;
    o.event = options.event.c_str();
    o.frequency_hz = options.frequency_hz;
    o.include_kernel = options.include_kernel;
    o.dwarf = options.dwarf;
    o.ring_pages = options.ring_pages;
    o.counter_events = options.counter_events.empty() ? nullptr : options.counter_events.c_str();
    np_profiler* p = nullptr;
    if (np_status s = np_profiler_create(&o, &p); s != NP_OK) return internal::ToStatus(s);
    return Profiler(p);
  }

  Profiler(Profiler&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  Profiler& operator=(Profiler&& other) noexcept {
    if (this != &other) {
      np_profiler_destroy(p_);
      p_ = std::exchange(other.p_, nullptr);
    }
    return *this;
  }
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  ~Profiler() { np_profiler_destroy(p_); }

  // Errors: kFailedPrecondition if running; kPermissionDenied (perf_event_paranoid, message says
  // what to do); kNotFound (event unsupported); kResourceExhausted (fds).
  absl::Status Start() { return internal::ToStatus(np_profiler_start(p_)); }
  // Errors: kFailedPrecondition if not running.
  absl::Status Stop() { return internal::ToStatus(np_profiler_stop(p_)); }
  // Drops samples and counter totals. Errors: kFailedPrecondition while running.
  absl::Status Reset() { return internal::ToStatus(np_profiler_reset(p_)); }
  // Folded stacks of everything since the last Reset. Errors: kFailedPrecondition while running;
  // kUnavailable when the file cannot be written.
  absl::Status WriteFolded(const std::string& path) {
    return internal::ToStatus(np_profiler_write_folded(p_, path.c_str()));
  }
  // Everything since the last Reset in the format the name selects (".svg", ".pb.gz",
  // ".speedscope.json", else folded). Errors: as WriteFolded.
  absl::Status Write(const std::string& path) {
    return internal::ToStatus(np_profiler_write(p_, path.c_str()));
  }
  // The counter table `nativeprof record` prints. Errors: kFailedPrecondition while running or
  // when counting is off; kUnavailable when the file cannot be written.
  absl::Status WriteCounters(const std::string& path) {
    return internal::ToStatus(np_profiler_write_counters(p_, path.c_str()));
  }
  // Counter totals since the last Reset. Errors: kFailedPrecondition while running or when
  // counting is off.
  absl::StatusOr<CounterSnapshot> Counters() const {
    size_t count = 0;
    if (np_status s = np_profiler_counters(p_, nullptr, 0, &count); s != NP_OK) {
      return internal::ToStatus(s);
    }
    std::vector<np_counter> raw(count);
    if (np_status s = np_profiler_counters(p_, raw.data(), raw.size(), &count); s != NP_OK) {
      return internal::ToStatus(s);
    }
    CounterSnapshot snapshot;
    for (const np_counter& c : raw) {
      snapshot.readings.push_back({c.name, c.value, c.supported != 0});
    }
    return snapshot;
  }
  // Samples since the last Reset. Errors: kFailedPrecondition while running.
  absl::StatusOr<uint64_t> Samples() const {
    uint64_t samples = 0;
    if (np_status s = np_profiler_samples(p_, &samples, nullptr); s != NP_OK) {
      return internal::ToStatus(s);
    }
    return samples;
  }

  np_profiler* c_handle() const { return p_; }

 private:
  explicit Profiler(np_profiler* p) : p_(p) {}
  np_profiler* p_ = nullptr;
};

// Profiles one region: starts in the constructor, stops in the destructor and, when a path was
// given, writes the folded stacks there. Failures are kept in status() (a destructor cannot
// return them). The profiler must outlive the scope.
class ScopedProfile {
 public:
  explicit ScopedProfile(Profiler& profiler, std::string folded_path = std::string())
      : profiler_(profiler), path_(std::move(folded_path)) {
    status_ = profiler_.Start();
  }
  ScopedProfile(const ScopedProfile&) = delete;
  ScopedProfile& operator=(const ScopedProfile&) = delete;
  ~ScopedProfile() { (void)Finish(); }

  // Stops (and writes) now instead of at the end of the scope; later calls return the result.
  absl::Status Finish() {
    if (finished_) return status_;
    finished_ = true;
    if (!status_.ok()) return status_;
    status_ = profiler_.Stop();
    if (status_.ok() && !path_.empty()) status_ = profiler_.WriteFolded(path_);
    return status_;
  }
  const absl::Status& status() const { return status_; }

 private:
  Profiler& profiler_;
  std::string path_;
  absl::Status status_;
  bool finished_ = false;
};

}  // namespace nativeprof

#endif  // NATIVEPROF_INCLUDE_NATIVEPROF_PROFILER_H_
