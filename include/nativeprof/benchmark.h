// Google Benchmark integration of libnativeprof: profiles each benchmark of a benchmark binary
// separately, writes <dir>/<benchmark name>.folded per benchmark ('/' and other unsafe characters
// in names become '_'), and puts counters (IPC, cache-miss rate, page faults and context
// switches per iteration; only those the kernel has here) into the benchmark's user counters, so
// they appear in the normal console table, --benchmark_format=json and --benchmark_out.
//
// Use:
//   static void BM_Parse(benchmark::State& state) { for (auto _ : state) Parse(); }
//   NATIVEPROF_BENCHMARK(BM_Parse)->Arg(64);   // instead of BENCHMARK(...)
//   NATIVEPROF_BENCHMARK_MAIN();               // instead of BENCHMARK_MAIN()
//   $ ./my_bench --nativeprof_out=profiles     // folded files land in profiles/
// Without --nativeprof_out (or NATIVEPROF_BENCHMARK_OUT) nothing is sampled; counters still are.
// A body may instead open `nativeprof::benchmark::BenchmarkScope scope(state);` itself.
//
// How it hooks in (see docs/library.md): Google Benchmark 1.7.1 (Debian 12) has no profiler
// hook and no State::name(), so the scope samples and counts around every call of the body and
// a reporter that wraps the display reporter names the accumulated profile when the benchmark's
// runs are reported. When NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER is 1 (Google Benchmark
// >= 1.8.5; the CMake package's nativeprof_benchmark_hook() sets it), sampling happens in
// benchmark::RegisterProfilerManager's dedicated extra run instead, so the measured runs carry
// only the (cheap) counters. Everything runs on the benchmark's main thread; header-only.
#ifndef NATIVEPROF_INCLUDE_NATIVEPROF_BENCHMARK_H_
#define NATIVEPROF_INCLUDE_NATIVEPROF_BENCHMARK_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "nativeprof/profiler.h"

#ifndef NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER
#define NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER 0
#endif

namespace nativeprof::benchmark {

// A benchmark name as a file name: '/' and characters shells or file systems dislike -> '_'.
inline std::string SanitizeBenchmarkName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\' || u < 0x20 || u == 0x7f || std::strchr(" \"'*?<>|$&;`", c)) c = '_';
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out;
}

struct HarnessOptions {
  std::string out_dir;   // empty: no sampling, no files
  bool counters = true;  // per-iteration counters in the user counters
  ProfilerOptions profiler;
};

// Process-wide state of the integration. Main thread only (Google Benchmark calls bodies of
// single-threaded benchmarks and reporters there; for ->Threads(n) only thread 0 profiles).
class Harness {
 public:
  static Harness& Get() {
    static Harness harness;
    return harness;
  }

  // Creates the profilers. Errors: those of Profiler::Create, kInvalidArgument when out_dir
  // cannot be created, is not a directory or cannot be written (found before any benchmark
  // runs, so no profile is lost to it).
  absl::Status Init(const HarnessOptions& options) {
    initialized_ = true;
    options_ = options;
    if (!options_.out_dir.empty()) {
      const char* dir = options_.out_dir.c_str();
      if (::mkdir(dir, 0777) != 0 && errno != EEXIST) {
        return absl::InvalidArgumentError("cannot create --nativeprof_out directory " +
                                          options_.out_dir + ": " + std::strerror(errno));
      }
      struct stat st;
      if (::stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return absl::InvalidArgumentError("--nativeprof_out " + options_.out_dir +
                                          " is not a directory: give a directory for the profiles");
      }
      if (::access(dir, W_OK | X_OK) != 0) {
        return absl::InvalidArgumentError("--nativeprof_out directory " + options_.out_dir +
                                          " is not writable: " + std::strerror(errno));
      }
    }
    const bool sampling = !options_.out_dir.empty();
    const bool separate = NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER != 0;
    // One profiler for both jobs unless sampling moves to the profiler manager's run: two
    // profilers running at once would each follow the other's reader thread.
    if (sampling || options_.counters) {
      ProfilerOptions o = options_.profiler;
      o.sample = sampling && !separate;
      o.count = options_.counters;
      if (o.sample || o.count) {
        absl::StatusOr<Profiler> p = Profiler::Create(o);
        if (!p.ok()) return p.status();
        scope_profiler_.emplace(*std::move(p));
      }
    }
    if (sampling && separate) {
      ProfilerOptions o = options_.profiler;
      o.sample = true;
      o.count = false;
      absl::StatusOr<Profiler> p = Profiler::Create(o);
      if (!p.ok()) return p.status();
      manager_profiler_.emplace(*std::move(p));
    }
    return absl::OkStatus();
  }

  bool sampling() const { return !options_.out_dir.empty(); }
  const HarnessOptions& options() const { return options_; }

  // Around one call of a benchmark body (BenchmarkScope).
  void BeginBody() {
    // Under a plain BENCHMARK_MAIN() nobody called Init: counters still work, files cannot (no
    // reporter names them).
    if (!initialized_) Report(Init(HarnessOptions()));
    if (!scope_profiler_.has_value()) return;
    if (options_.counters) {
      absl::StatusOr<CounterSnapshot> c = scope_profiler_->Counters();
      before_ = c.ok() ? *std::move(c) : CounterSnapshot();
    }
    body_running_ = Report(scope_profiler_->Start());
  }
  void EndBody(::benchmark::State& state) {
    if (!body_running_) return;
    body_running_ = false;
    if (!Report(scope_profiler_->Stop())) return;
    if (!NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER && sampling()) pending_ = true;
    if (!options_.counters) return;
    absl::StatusOr<CounterSnapshot> after = scope_profiler_->Counters();
    if (!after.ok()) return;
    const CounterSnapshot d = after->Minus(before_);
    // Ratios are per run; counts are divided by the iterations (kAvgIterations). Counters the
    // kernel cannot give are left out rather than shown as 0.
    if (auto v = d.Ipc()) state.counters["IPC"] = *v;
    if (auto v = d.CacheMissRate()) state.counters["cache_miss_rate"] = *v;
    if (auto v = d.PageFaults()) {
      state.counters["page_faults"] =
          ::benchmark::Counter(*v, ::benchmark::Counter::kAvgIterations);
    }
    if (auto v = d.ContextSwitches()) {
      state.counters["ctx_switches"] =
          ::benchmark::Counter(*v, ::benchmark::Counter::kAvgIterations);
    }
  }

  // Around the profiler manager's extra run (Google Benchmark >= 1.8.5).
  void BeginManagedRun() {
    if (manager_profiler_.has_value()) manager_running_ = Report(manager_profiler_->Start());
  }
  void EndManagedRun() {
    if (!manager_running_) return;
    manager_running_ = false;
    if (Report(manager_profiler_->Stop())) pending_ = true;
  }

  // A benchmark's runs are being reported: what was sampled since the last flush is its profile.
  void Flush(const std::string& benchmark_name) {
    if (!pending_) return;
    pending_ = false;
    Profiler* p = manager_profiler_.has_value() ? &*manager_profiler_ : &*scope_profiler_;
    const std::string path =
        options_.out_dir + "/" + SanitizeBenchmarkName(benchmark_name) + ".folded";
    if (!Report(p->WriteFolded(path))) ++unwritten_;
    Report(p->Reset());
  }

  // Profiles that could not be written (the directory went away or filled up during the run).
  int unwritten() const { return unwritten_; }

 private:
  // Diagnostics go to stderr once per distinct failure; benchmarks keep running.
  bool Report(const absl::Status& st) {
    if (st.ok()) return true;
    std::string text = st.ToString();
    if (text != last_error_) std::fprintf(stderr, "nativeprof: %s\n", text.c_str());
    last_error_ = std::move(text);
    return false;
  }

  bool initialized_ = false;
  HarnessOptions options_;
  std::optional<Profiler> scope_profiler_;
  std::optional<Profiler> manager_profiler_;
  CounterSnapshot before_;
  bool body_running_ = false;
  bool manager_running_ = false;
  bool pending_ = false;
  int unwritten_ = 0;
  std::string last_error_;
};

// Profiles one call of a benchmark body: open it first thing in the body, before the loop.
class BenchmarkScope {
 public:
  explicit BenchmarkScope(::benchmark::State& state) : state_(state) {
    if (state_.thread_index() == 0) Harness::Get().BeginBody();
  }
  BenchmarkScope(const BenchmarkScope&) = delete;
  BenchmarkScope& operator=(const BenchmarkScope&) = delete;
  ~BenchmarkScope() {
    if (state_.thread_index() == 0) Harness::Get().EndBody(state_);
  }

 private:
  ::benchmark::State& state_;
};

// The body Google Benchmark runs for NATIVEPROF_BENCHMARK(Fn): Fn with a BenchmarkScope around
// it. A function template rather than a lambda, so profiles show a short, readable frame.
template <void (*Fn)(::benchmark::State&)>
void ProfiledBody(::benchmark::State& state) {
  BenchmarkScope scope(state);
  Fn(state);
}

// Wraps the display reporter: flushes each benchmark's profile when its runs are reported and
// forwards everything unchanged.
class ProfilingReporter : public ::benchmark::BenchmarkReporter {
 public:
  explicit ProfilingReporter(std::unique_ptr<::benchmark::BenchmarkReporter> inner)
      : inner_(std::move(inner)) {}
  bool ReportContext(const Context& context) override { return inner_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    // run_name, not benchmark_name(): with --benchmark_report_aggregates_only only the
    // aggregates ("BM_X_mean") are reported, and the file is named after the benchmark.
    if (!runs.empty()) Harness::Get().Flush(runs.front().run_name.str());
    inner_->ReportRuns(runs);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  std::unique_ptr<::benchmark::BenchmarkReporter> inner_;
};

#if NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER
class ProfilerManagerHook : public ::benchmark::ProfilerManager {
 public:
  void AfterSetupStart() override { Harness::Get().BeginManagedRun(); }
  void BeforeTeardownStop() override { Harness::Get().EndManagedRun(); }
};
#endif

// The display reporter Google Benchmark itself would build from --benchmark_format (console,
// json, csv), --benchmark_color and --benchmark_counters_tabular.
inline std::unique_ptr<::benchmark::BenchmarkReporter> MakeDisplayReporter(
    const std::string& format, const std::string& color, bool tabular) {
  if (format == "json") return std::make_unique<::benchmark::JSONReporter>();
  BENCHMARK_DISABLE_DEPRECATED_WARNING
  if (format == "csv") return std::make_unique<::benchmark::CSVReporter>();
  BENCHMARK_RESTORE_DEPRECATED_WARNING
  const char* term = std::getenv("TERM");
  const bool use_color =
      color == "true" || color == "yes" ||
      (color == "auto" && ::isatty(STDOUT_FILENO) && term != nullptr &&
       std::strcmp(term, "dumb") != 0);
  int options = ::benchmark::ConsoleReporter::OO_None;
  if (use_color) options |= ::benchmark::ConsoleReporter::OO_Color;
  if (tabular) options |= ::benchmark::ConsoleReporter::OO_Tabular;
  return std::make_unique<::benchmark::ConsoleReporter>(
      static_cast<::benchmark::ConsoleReporter::OutputOptions>(options));
}

// The value of boolean flag `arg` named `name` in Google Benchmark's forms (`--name`,
// `--name=true|false|yes|no|1|0`): 1 or 0; -1 for another value; -2 when it is not that flag.
inline int BoolFlag(const std::string& arg, const std::string& name) {
  if (arg == name) return 1;
  if (arg.rfind(name + "=", 0) != 0) return -2;
  const std::string v = arg.substr(name.size() + 1);
  if (v == "true" || v == "yes" || v == "1") return 1;
  if (v == "false" || v == "no" || v == "0") return 0;
  return -1;
}

// Exit codes of Main besides Google Benchmark's: a profile that could not be written, as
// `nativeprof record` exits when an output cannot be written.
inline constexpr int kExitProfileNotWritten = 4;

// A complete main(): takes --nativeprof_out=DIR and --nativeprof_counters[=BOOL] out of argv
// (NATIVEPROF_BENCHMARK_OUT is the default for the former), then runs Google Benchmark with the
// profiling reporter. Returns the process exit code: 1 for a bad flag or an output directory
// that cannot take the profiles, kExitProfileNotWritten when one could not be written anyway.
inline int Main(int argc, char** argv) {
  HarnessOptions options;
  if (const char* env = std::getenv("NATIVEPROF_BENCHMARK_OUT")) options.out_dir = env;
  std::string format = "console";
  std::string color = "auto";
  bool tabular = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--nativeprof_out=", 0) == 0) {
      options.out_dir = arg.substr(std::strlen("--nativeprof_out="));
      continue;
    }
    if (const int on = BoolFlag(arg, "--nativeprof_counters"); on != -2) {
      if (on < 0) {
        std::fprintf(stderr, "nativeprof: %s: give --nativeprof_counters=true or =false\n",
                     arg.c_str());
        return 1;
      }
      options.counters = on == 1;
      continue;
    }
    if (arg == "--nativeprof_out") {
      std::fprintf(stderr, "nativeprof: --nativeprof_out needs its directory after '=': "
                           "--nativeprof_out=DIR\n");
      return 1;
    }
    // Read (not consumed): Google Benchmark parses these too.
    if (arg.rfind("--benchmark_format=", 0) == 0) format = arg.substr(arg.find('=') + 1);
    if (arg.rfind("--benchmark_color=", 0) == 0) color = arg.substr(arg.find('=') + 1);
    if (arg == "--benchmark_counters_tabular" || arg == "--benchmark_counters_tabular=true") {
      tabular = true;
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  ::benchmark::Initialize(&argc, argv);
  if (::benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (absl::Status st = Harness::Get().Init(options); !st.ok()) {
    std::fprintf(stderr, "nativeprof: %s\n", st.ToString().c_str());
    return 1;
  }
#if NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER
  static ProfilerManagerHook hook;
  if (Harness::Get().sampling()) ::benchmark::RegisterProfilerManager(&hook);
#endif
  ProfilingReporter reporter(MakeDisplayReporter(format, color, tabular));
  ::benchmark::RunSpecifiedBenchmarks(&reporter);
#if NATIVEPROF_BENCHMARK_HAS_PROFILER_MANAGER
  ::benchmark::RegisterProfilerManager(nullptr);
#endif
  ::benchmark::Shutdown();
  if (const int n = Harness::Get().unwritten(); n > 0) {
    std::fprintf(stderr, "nativeprof: %d profile%s could not be written to %s\n", n,
                 n == 1 ? "" : "s", options.out_dir.c_str());
    return kExitProfileNotWritten;
  }
  return 0;
}

}  // namespace nativeprof::benchmark

// Like BENCHMARK(fn), with a BenchmarkScope around each call of fn.
#define NATIVEPROF_BENCHMARK(fn) \
  BENCHMARK_PRIVATE_DECLARE(fn) =           \
      ::benchmark::RegisterBenchmark(#fn, &::nativeprof::benchmark::ProfiledBody<fn>)

// Like BENCHMARK_MAIN(), with the profiling reporter and the --nativeprof_* flags.
#define NATIVEPROF_BENCHMARK_MAIN()                                                   \
  int main(int argc, char** argv) { return ::nativeprof::benchmark::Main(argc, argv); } \
  int main(int, char**)

#endif  // NATIVEPROF_INCLUDE_NATIVEPROF_BENCHMARK_H_
