// Command line of `nativeprof record`: parsing and validation, so every bad input is rejected with
// one clear line before the target starts. Main thread.
#ifndef NATIVEPROF_TOOLS_RECORD_OPTIONS_H_
#define NATIVEPROF_TOOLS_RECORD_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "output/profile_writer.h"
#include "sampler/event_spec.h"
#include "symbolize/symbolizer.h"
#include "unwind/dwarf_stack_size.h"
#include "unwind/unwinder.h"

namespace nativeprof::tools {

// The names of the views --off-cpu writes beside each output (RecordOptions::ViewPath).
inline constexpr char kOffCpuView[] = "offcpu";
inline constexpr char kWallView[] = "wall";
// A speedscope output of --off-cpu holds the wall view; its CPU-only sibling is X.cpu.*.
inline constexpr char kCpuView[] = "cpu";
// The views --alloc writes beside each output: allocated bytes, allocations, temporary
// allocations, bytes live at the peak, bytes leaked; pprof gets one heap profile with them all.
inline constexpr char kAllocBytesView[] = "alloc";
inline constexpr char kAllocCountView[] = "allocs";
inline constexpr char kTemporaryView[] = "temporary";
inline constexpr char kPeakView[] = "peak";
inline constexpr char kLeakedView[] = "leaked";
inline constexpr char kHeapView[] = "heap";
// --alloc without a rate: one sample per 512 KiB allocated on average.
inline constexpr uint64_t kDefaultAllocRate = 512 * 1024;

struct RecordOutput {
  std::string path;
  output::OutputFormat format = output::OutputFormat::kFolded;
};

struct RecordOptions {
  uint64_t frequency_hz = 999;
  sampler::EventSpec event;            // default cycles (falls back to cpu-clock)
  size_t ring_pages = 0;               // 0 = fit perf_event_mlock_kb
  std::vector<RecordOutput> outputs;   // default nativeprof.folded
  // DWARF by default: most optimized code has no frame pointers (fp stays for when asked).
  unwind::CallGraphMode call_graph = unwind::CallGraphMode::kDwarf;
  bool call_graph_explicit = false;    // the user chose --call-graph
  uint32_t dwarf_stack_bytes = unwind::kDefaultDwarfStackSize;
  unwind::DwarfBackend dwarf_backend = unwind::DwarfBackend::kNative;
  // record loads the symbols of mapped modules while the target runs: it is a process of its own,
  // with a CPU the target usually leaves idle (the library, inside the process it measures, not).
  symbolize::SymbolizerOptions symbolizer = [] {
    symbolize::SymbolizerOptions s;
    s.prefetch = true;
    return s;
  }();
  output::WriteOptions write;
  bool counters = true;                // counting events beside the sampling event
  // Raise the drain thread's priority (SCHED_FIFO, else a negative nice) where permitted, so it
  // keeps up on a saturated machine; --no-boost leaves it as started.
  bool boost = true;
  std::vector<sampler::EventSpec> counter_events;  // empty = the default set (CounterEvents())
  // --off-cpu: also sample every context switch, for where threads wait (blocked or runnable).
  // --wall implies it and also writes the combined on+off time views.
  bool off_cpu = false;
  bool wall = false;
  // --off-cpu-stack: user-stack bytes copied per switch sample; 0 = none (the kernel's frame-
  // pointer walk). Default: the --call-graph dwarf size.
  std::optional<uint32_t> switch_stack_bytes;
  // --alloc[=RATE]: allocation profiling through the preload library; the mean bytes between
  // sampled allocations (1 = every allocation).
  std::optional<uint64_t> alloc_rate_bytes;
  std::vector<int> pids;               // -p: attach instead of running a command
  double duration_seconds = 0;         // --duration; 0 = until the target exits / Ctrl-C
  int verbosity = 0;
  std::vector<std::string> command;    // after --
  std::string command_directory;       // where the command runs; empty: here (no CLI option:
                                       // set by `cargo nativeprof` for benches and tests)
  // False with --no-cpu, whose sampling event (sampler::NoSamplesEvent) takes no samples.
  bool cpu_samples() const { return !sampler::IsNoSamplesEvent(event); }
  // The counting events to open: --counters, or perf stat's default set.
  std::vector<sampler::EventSpec> CounterEvents() const;
  // Where the off-CPU (`view` kOffCpuView) or wall (kWallView) view of an output goes: beside
  // it, the view's name before the extension ("out.folded" -> "out.offcpu.folded").
  static std::string ViewPath(const std::string& path, const std::string& view);
  // The inverse: for a path ViewPath could have made, its view (and in *main the output it was
  // made from); "" for any other path.
  static std::string ViewOfPath(const std::string& path, std::string* main);
  // The metadata JSON goes beside the first output: "<path>.json".
  std::string MetadataPath() const { return outputs.front().path + ".json"; }
};

// "--alloc=RATE": bytes, with an optional K, M or G (binary) suffix; at least 1.
absl::StatusOr<uint64_t> ParseAllocRate(absl::string_view text);

// Parses argv (argv[0] = "record"). On `--help` returns kCancelled after printing usage to stdout.
// Errors: kInvalidArgument with a one-line message (the caller prints it and exits 2).
absl::StatusOr<RecordOptions> ParseRecordOptions(int argc, char** argv);

const char* RecordUsage();

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_RECORD_OPTIONS_H_
