#include "tools/record_options.h"

#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sampler/counter_set.h"
#include "sampler/perf_event.h"
#include "unwind/dwarf_stack_size.h"

namespace nativeprof::tools {
namespace {

enum LongOnly {
  kCallGraph = 1000,
  kUnwinder,
  kNoInline,
  kInline,
  kLines,
  kFullNames,
  kAddresses,
  kFormat,
  kTitle,
  kFlamechart,
  kNoCounters,
  kCounters,
  kDuration,
  kNoBoost,
  kOffCpu,
  kWall,
  kOffCpuStack,
  kAlloc,
  kNoCpu,
};

absl::Status Bad(absl::string_view what) { return absl::InvalidArgumentError(what); }

absl::Status ParseCallGraph(absl::string_view value, RecordOptions* o) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, ',');
  o->call_graph_explicit = true;
  if (parts[0] == "fp") {
    if (parts.size() > 1) return Bad("--call-graph fp takes no size");
    o->call_graph = unwind::CallGraphMode::kFramePointer;
    return absl::OkStatus();
  }
  if (parts[0] == "dwarf") {
    o->call_graph = unwind::CallGraphMode::kDwarf;
    if (parts.size() > 2) return Bad(absl::StrCat("bad --call-graph value '", value, "'"));
    if (parts.size() == 2) {
      // An empty SIZE ("dwarf,") is a mistake here, not a request for the default.
      absl::StatusOr<uint32_t> size = parts[1].empty()
                                          ? absl::InvalidArgumentError("empty dwarf stack size")
                                          : unwind::ParseDwarfStackSize(parts[1]);
      if (!size.ok()) return Bad(absl::StrCat("--call-graph: ", size.status().message()));
      o->dwarf_stack_bytes = *size;
    }
    return absl::OkStatus();
  }
  return Bad(absl::StrCat("unknown --call-graph mode '", parts[0], "'; use fp or dwarf[,SIZE]"));
}

}  // namespace

std::string RecordOptions::ViewPath(const std::string& path, const std::string& view) {
  // The extension is what FormatFromPath reads: keep the whole of a known one.
  const absl::string_view ext = output::OutputExtensionOf(path);
  return absl::StrCat(absl::string_view(path).substr(0, path.size() - ext.size()), ".", view,
                      ext);
}

std::string RecordOptions::ViewOfPath(const std::string& path, std::string* main) {
  // ViewPath's inverse: the view right before the extension (or at the very end), in the file's
  // name, not in a directory's.
  const absl::string_view ext = output::OutputExtensionOf(path);
  const absl::string_view stem = absl::string_view(path).substr(0, path.size() - ext.size());
  for (const char* view : {kOffCpuView, kWallView, kAllocBytesView, kAllocCountView,
                           kTemporaryView, kPeakView, kLeakedView, kHeapView}) {
    const std::string suffix = absl::StrCat(".", view);
    if (!absl::EndsWith(stem, suffix)) continue;
    const absl::string_view base = stem.substr(0, stem.size() - suffix.size());
    if (base.empty() || base.back() == '/') continue;
    *main = absl::StrCat(base, ext);
    return view;
  }
  return "";
}

absl::StatusOr<uint64_t> ParseAllocRate(absl::string_view text) {
  uint64_t scale = 1;
  absl::string_view digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k': case 'K': scale = uint64_t{1} << 10; break;
      case 'm': case 'M': scale = uint64_t{1} << 20; break;
      case 'g': case 'G': scale = uint64_t{1} << 30; break;
      default: break;
    }
    if (scale != 1) digits.remove_suffix(1);
  }
  uint64_t n = 0;
  // SimpleAtoi allows spaces around the digits; a rate has none.
  const bool bare = !digits.empty() && absl::ascii_isdigit(digits.front()) &&
                    absl::ascii_isdigit(digits.back());
  if (!bare || !absl::SimpleAtoi(digits, &n) || n == 0 || n > (uint64_t{1} << 40) / scale) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--alloc=", text, ": give the mean bytes between samples, e.g. --alloc=512K, or "
        "--alloc=1 to record every allocation"));
  }
  return n * scale;
}

std::vector<sampler::EventSpec> RecordOptions::CounterEvents() const {
  return counter_events.empty() ? sampler::DefaultCounterEvents() : counter_events;
}

const char* RecordUsage() {
  return R"(usage: nativeprof record [options] -- COMMAND [ARGS...]
       nativeprof record [options] -p PID[,PID...]

Runs COMMAND (or attaches to PIDs) and samples the stacks of every thread and child process.

  -F, --freq HZ           samples per second per thread (default 999)
  -e, --event EVENT       sampling event: cycles (default; falls back to cpu-clock when the CPU
                          has no PMU), instructions, cpu-clock, task-clock, page-faults, cache-misses
  -m, --mmap-pages PAGES  ring buffer data pages per CPU, a power of two (default: fits
                          /proc/sys/kernel/perf_event_mlock_kb)
  -o, --output FILE       output file (repeatable; default nativeprof.folded); the format comes from
                          --format or the extension: .svg, .pb.gz, .speedscope.json, else folded
      --format FMT        folded | svg | pprof | speedscope (applies to the next -o, or to all)
      --call-graph MODE   dwarf[,SIZE] (default: DWARF CFI over a copy of SIZE bytes of user
                          stack, default 8192) or fp (the kernel's frame-pointer walk; -g)
      --unwinder NAME     DWARF backend: native (default) or libunwind
      --no-inline         do not expand inlined functions
      --lines             add file:line to leaf frames
      --full-names        keep C++ argument lists and Rust hashes
      --addresses         unnamed frames as module+0xOFFSET instead of [module]
      --title TEXT        flame graph title
      --flamechart        SVG in time order instead of merged
      --no-counters       do not count events beside sampling
      --off-cpu           also record where threads wait: every context switch is sampled and
                          weighted by the time until the thread runs again (blocked under the
                          call that blocked, runnable under [waiting for CPU]); writes
                          OUT.offcpu.* beside each folded/SVG output (microseconds); pprof
                          outputs get cpu, off_cpu and wall time in one file, speedscope ones
                          the wall timeline with OUT.cpu.* and OUT.offcpu.* beside it.
                          Samples cpu-clock unless -e names another event. Needs kernel-side
                          events (perf_event_paranoid <= 1, CAP_PERFMON or root)
      --wall              --off-cpu, plus OUT.wall.*: on- and off-CPU time in one profile
      --off-cpu-stack N   user-stack bytes copied per switch sample (default: the dwarf size);
                          0 copies none and uses the kernel's frame-pointer walk (cheaper at
                          high switch rates)
      --alloc[=RATE]      also profile allocations (malloc, calloc, realloc, free, the aligned
                          ones; C++ new and Rust's System allocator reach them) through a
                          preloaded library: exact totals (calls, bytes, temporary, peak, leaked)
                          in the summary and FILE.json, and call sites sampled once per RATE bytes
                          on average (default 512K; 1 = every allocation) in OUT.alloc.*,
                          OUT.allocs.*, OUT.temporary.*, OUT.peak.*, OUT.leaked.* and an
                          OUT.heap.pb.gz pprof heap profile. Not with -p
      --no-cpu            with --alloc: allocations only, no CPU samples (no OUT.folded CPU
                          profile; the counters still count unless --no-counters)
  -p, --pid PID[,PID...]  attach to running processes instead of running a command
      --duration SECONDS  stop this long after sampling started (wall time)
      --no-boost          do not raise nativeprof's priority (by default, where permitted, the
                          thread that drains the rings runs at SCHED_FIFO 1, else nice -20)
  -v, --verbose           more diagnostics on stderr (repeat for more)
  -h, --help              this text

Writes FILE.json beside the first output with the run's metadata and quality figures.
)";
}

namespace {

const option kLongOptions[] = {
    {"freq", required_argument, nullptr, 'F'},
    {"event", required_argument, nullptr, 'e'},
    {"mmap-pages", required_argument, nullptr, 'm'},
    {"output", required_argument, nullptr, 'o'},
    {"pid", required_argument, nullptr, 'p'},
    {"verbose", no_argument, nullptr, 'v'},
    {"help", no_argument, nullptr, 'h'},
    {"call-graph", required_argument, nullptr, kCallGraph},
    {"unwinder", required_argument, nullptr, kUnwinder},
    {"no-inline", no_argument, nullptr, kNoInline},
    {"inline", no_argument, nullptr, kInline},
    {"lines", no_argument, nullptr, kLines},
    {"full-names", no_argument, nullptr, kFullNames},
    {"addresses", no_argument, nullptr, kAddresses},
    {"format", required_argument, nullptr, kFormat},
    {"title", required_argument, nullptr, kTitle},
    {"flamechart", no_argument, nullptr, kFlamechart},
    {"no-counters", no_argument, nullptr, kNoCounters},
    {"counters", required_argument, nullptr, kCounters},
    {"duration", required_argument, nullptr, kDuration},
    {"no-boost", no_argument, nullptr, kNoBoost},
    {"off-cpu", no_argument, nullptr, kOffCpu},
    {"wall", no_argument, nullptr, kWall},
    {"off-cpu-stack", required_argument, nullptr, kOffCpuStack},
    {"alloc", optional_argument, nullptr, kAlloc},
    {"no-cpu", no_argument, nullptr, kNoCpu},
    {nullptr, 0, nullptr, 0},
};

// What the option loop gathers besides RecordOptions itself: the event and the outputs can only
// be resolved once every option was seen.
struct ParseState {
  RecordOptions o;
  std::string event_name = "cycles";
  bool event_explicit = false;
  std::vector<std::string> output_paths;
  std::vector<std::string> output_formats;  // parallel to output_paths; "" = infer
  std::string pending_format;               // the last --format not yet taken by an -o
  bool no_cpu = false;                      // --no-cpu: the event becomes NoSamplesEvent()
  bool alloc_without_rate = false;          // "--alloc", no "=RATE"
};

absl::Status ParseFrequency(absl::string_view arg, RecordOptions* o) {
  int64_t hz = 0;
  if (!absl::SimpleAtoi(arg, &hz) || hz <= 0) {
    return Bad(absl::StrCat("-F '", arg, "' must be a positive number of samples per second"));
  }
  const uint64_t max = sampler::MaxSampleRate();
  if (static_cast<uint64_t>(hz) > max) {
    return Bad(absl::StrCat("-F ", hz, " is above the kernel's limit of ", max,
                            " Hz (/proc/sys/kernel/perf_event_max_sample_rate); use -F ", max,
                            " or less"));
  }
  o->frequency_hz = static_cast<uint64_t>(hz);
  return absl::OkStatus();
}

absl::Status ParseRingPages(absl::string_view arg, RecordOptions* o) {
  int64_t pages = 0;
  if (!absl::SimpleAtoi(arg, &pages) || pages <= 0 || (pages & (pages - 1)) != 0 ||
      pages > (1 << 20)) {
    return Bad(absl::StrCat("-m '", arg, "' must be a power of two number of pages (e.g. 64)"));
  }
  o->ring_pages = static_cast<size_t>(pages);
  return absl::OkStatus();
}

absl::Status ParsePids(absl::string_view arg, RecordOptions* o) {
  for (absl::string_view p : absl::StrSplit(arg, ',')) {
    int pid = 0;
    // Digits only: SimpleAtoi alone also takes " 12" and "+12", and an empty piece (",12")
    // is a typo, not a list.
    if (p.empty() || p.find_first_not_of("0123456789") != absl::string_view::npos ||
        !absl::SimpleAtoi(p, &pid) || pid <= 0) {
      return Bad(absl::StrCat("-p '", arg, "' must be a comma-separated list of PIDs"));
    }
    o->pids.push_back(pid);
  }
  return absl::OkStatus();
}

absl::Status ParseUnwinder(absl::string_view arg, RecordOptions* o) {
  if (arg == "native") {
    o->dwarf_backend = unwind::DwarfBackend::kNative;
  } else if (arg == "libunwind") {
    o->dwarf_backend = unwind::DwarfBackend::kLibunwind;
  } else {
    return Bad(absl::StrCat("unknown --unwinder '", arg, "'; use native or libunwind"));
  }
  return absl::OkStatus();
}

absl::Status ParseDuration(absl::string_view arg, RecordOptions* o) {
  double s = 0;
  // Above 1e9 s (31 years) the deadline would overflow the clock's nanoseconds and lie in the
  // past: a run of "inf" stopped after 0.1 s. Without --duration, Ctrl-C or the target's exit
  // stops it.
  constexpr double kMaxDurationSeconds = 1e9;
  if (!absl::SimpleAtod(arg, &s) || !(s > 0) || !(s <= kMaxDurationSeconds)) {
    return Bad(absl::StrCat("--duration '", arg,
                            "' must be a positive number of seconds up to 1e9; to record until "
                            "Ctrl-C or the target exits, leave --duration out"));
  }
  o->duration_seconds = s;
  return absl::OkStatus();
}

// Applies one option as getopt_long returned it (`c`, its value `arg`; `option_text` is the
// argument as typed, for messages). kCancelled after printing the usage for --help.
absl::Status ApplyOption(int c, absl::string_view arg, const char* option_text, ParseState* st) {
  RecordOptions& o = st->o;
  switch (c) {
    case 'F':
      return ParseFrequency(arg, &o);
    case 'e':
      st->event_name = std::string(arg);
      st->event_explicit = true;
      return absl::OkStatus();
    case 'm':
      return ParseRingPages(arg, &o);
    case 'o':
      st->output_paths.push_back(std::string(arg));
      st->output_formats.push_back(st->pending_format);
      st->pending_format.clear();
      return absl::OkStatus();
    case 'p':
      return ParsePids(arg, &o);
    case 'g':  // perf's -g: frame-pointer call graphs
      return ParseCallGraph("fp", &o);
    case kCallGraph:
      return ParseCallGraph(arg, &o);
    case kUnwinder:
      return ParseUnwinder(arg, &o);
    case kNoInline:
      o.symbolizer.inline_frames = false;
      return absl::OkStatus();
    case kInline:
      o.symbolizer.inline_frames = true;
      return absl::OkStatus();
    case kLines:
      o.symbolizer.lines = true;
      return absl::OkStatus();
    case kFullNames:
      o.symbolizer.full_names = true;
      return absl::OkStatus();
    case kAddresses:
      o.symbolizer.addresses = true;
      return absl::OkStatus();
    case kFormat: {
      absl::StatusOr<output::OutputFormat> f = output::ParseOutputFormat(arg);
      if (!f.ok()) return f.status();
      st->pending_format = std::string(arg);
      return absl::OkStatus();
    }
    case kTitle:
      o.write.title = std::string(arg);
      return absl::OkStatus();
    case kFlamechart:
      o.write.flamechart = true;
      return absl::OkStatus();
    case kNoCounters:
      o.counters = false;
      return absl::OkStatus();
    case kNoCpu:
      st->no_cpu = true;
      return absl::OkStatus();
    case kCounters: {
      absl::StatusOr<std::vector<sampler::EventSpec>> list = sampler::ParseEventList(arg);
      if (!list.ok()) return list.status();
      o.counter_events = *std::move(list);
      return absl::OkStatus();
    }
    case kDuration:
      return ParseDuration(arg, &o);
    case kNoBoost:
      o.boost = false;
      return absl::OkStatus();
    case kOffCpu:
      o.off_cpu = true;
      return absl::OkStatus();
    case kWall:
      o.wall = true;
      o.off_cpu = true;
      return absl::OkStatus();
    case kOffCpuStack: {
      if (arg == "0") {
        o.switch_stack_bytes = 0;
        return absl::OkStatus();
      }
      absl::StatusOr<uint32_t> size = arg.empty()
                                          ? absl::InvalidArgumentError("empty stack size")
                                          : unwind::ParseDwarfStackSize(arg);
      if (!size.ok()) return Bad(absl::StrCat("--off-cpu-stack: ", size.status().message(), ", or 0"));
      o.switch_stack_bytes = *size;
      return absl::OkStatus();
    }
    case kAlloc: {
      // "--alloc" takes the default rate; "--alloc=" is a rate left out by mistake.
      if (arg.empty() && !absl::StrContains(option_text, '=')) {
        o.alloc_rate_bytes = kDefaultAllocRate;
        st->alloc_without_rate = true;
        return absl::OkStatus();
      }
      absl::StatusOr<uint64_t> rate = ParseAllocRate(arg);
      if (!rate.ok()) return rate.status();
      o.alloc_rate_bytes = *rate;
      return absl::OkStatus();
    }
    case 'v':
      ++o.verbosity;
      return absl::OkStatus();
    case 'h':
      std::fputs(RecordUsage(), stdout);
      return absl::CancelledError("help");
    case ':':
      return Bad(absl::StrCat("option ", option_text, " needs a value"));
    default:
      return Bad(absl::StrCat("unknown option '", option_text,
                              "'; see 'nativeprof record --help'"));
  }
}

// The command after the options, or -p: exactly one of them.
absl::Status TakeTarget(int first, int argc, char** argv, RecordOptions* o) {
  for (int i = first; i < argc; ++i) o->command.push_back(argv[i]);
  if (o->command.empty() && o->pids.empty()) {
    return Bad("no command given; usage: nativeprof record [options] -- COMMAND [ARGS...]");
  }
  if (!o->command.empty() && !o->pids.empty()) {
    return Bad("give either a command or -p PID, not both");
  }
  return absl::OkStatus();
}

// Each -o with its format: its own --format, else a trailing --format, else its extension.
void ResolveOutputs(ParseState* st) {
  if (st->output_paths.empty()) {
    st->output_paths.push_back("nativeprof.folded");
    st->output_formats.push_back(st->pending_format);
  } else if (!st->pending_format.empty()) {
    // A trailing --format applies to every -o that did not name its own.
    for (std::string& f : st->output_formats) {
      if (f.empty()) f = st->pending_format;
    }
  }
  for (size_t i = 0; i < st->output_paths.size(); ++i) {
    RecordOutput out;
    out.path = st->output_paths[i];
    out.format = st->output_formats[i].empty()
                     ? output::FormatFromPath(out.path)
                     : *output::ParseOutputFormat(st->output_formats[i]);
    st->o.outputs.push_back(std::move(out));
  }
}

}  // namespace

absl::StatusOr<RecordOptions> ParseRecordOptions(int argc, char** argv) {
  ParseState st;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+:F:e:m:o:p:gvh", kLongOptions, nullptr)) != -1) {
    absl::Status applied =
        ApplyOption(c, optarg != nullptr ? optarg : "", argv[optind - 1], &st);
    if (!applied.ok()) return applied;
  }
  // After "--" the command is explicit, whatever it is called ("--alloc -- 4096").
  const bool command_after_dashes = optind > 1 && absl::string_view(argv[optind - 1]) == "--";
  if (absl::Status target = TakeTarget(optind, argc, argv, &st.o); !target.ok()) return target;
  // "--alloc 4096 -- CMD": the rate is an optional argument, joined by '=' only; getopt took
  // it for the command ("cannot execute '4096'" said nothing of why).
  if (st.alloc_without_rate && !command_after_dashes && !st.o.command.empty() &&
      ParseAllocRate(st.o.command[0]).ok() &&
      ::access(st.o.command[0].c_str(), F_OK) != 0) {
    return Bad(absl::StrCat("--alloc ", st.o.command[0], ": the rate is joined by '=' "
                            "(--alloc=", st.o.command[0], "), else it is read as the command"));
  }
  // Off-CPU time is in nanoseconds; CPU samples must be too for the two to add up.
  if (st.o.off_cpu && !st.event_explicit) st.event_name = "cpu-clock";
  absl::StatusOr<sampler::EventSpec> event = sampler::ParseEventSpec(st.event_name);
  if (!event.ok()) return event.status();
  st.o.event = *std::move(event);
  if (st.o.wall && st.o.event.name != "cpu-clock" && st.o.event.name != "task-clock") {
    return Bad(absl::StrCat("--wall adds CPU and off-CPU time, so it needs a time event; -e ",
                            st.o.event.name, " counts ", st.o.event.name,
                            ": use -e cpu-clock or -e task-clock"));
  }
  if (st.o.switch_stack_bytes.has_value() && !st.o.off_cpu) {
    return Bad("--off-cpu-stack applies to --off-cpu; add --off-cpu");
  }
  if (st.o.alloc_rate_bytes.has_value() && !st.o.pids.empty()) {
    return Bad("--alloc loads its library into the command it starts, which a running process "
               "(-p) cannot be given; run the program as: nativeprof record --alloc -- COMMAND");
  }
  if (st.o.alloc_rate_bytes.has_value() && st.o.call_graph != unwind::CallGraphMode::kDwarf) {
    return Bad("--alloc unwinds allocation stacks from stack copies, which needs --call-graph "
               "dwarf (the default); drop --call-graph fp");
  }
  // A ring must hold one sample at least: with a DWARF stack copy, the copy and some 2 KiB of
  // header, registers and kernel call chain. A smaller one drops every sample (a -m 1 run
  // recorded 0 samples and said only that they were lost).
  if (st.o.ring_pages != 0 && st.o.call_graph == unwind::CallGraphMode::kDwarf) {
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t sample = uint64_t{st.o.dwarf_stack_bytes} + 2048;
    if (st.o.ring_pages * page < sample) {
      uint64_t pages = 1;
      while (pages * page < sample) pages *= 2;
      return Bad(absl::StrCat("-m ", st.o.ring_pages, ": a ring of ", st.o.ring_pages * page / 1024,
                              " KiB holds no sample with its ", st.o.dwarf_stack_bytes,
                              "-byte stack copy; give -m ", pages,
                              " or more, or a smaller --call-graph dwarf,SIZE"));
    }
  }
  if (st.no_cpu) {
    // The conflict first: advice to add --alloc would only lead to it.
    if (st.o.off_cpu || st.event_explicit) {
      return Bad(absl::StrCat("--no-cpu records allocations only; drop ",
                              st.o.off_cpu ? (st.o.wall ? "--wall" : "--off-cpu") : "-e",
                              " or --no-cpu"));
    }
    if (!st.o.alloc_rate_bytes.has_value()) {
      return Bad("--no-cpu turns CPU sampling off, which leaves nothing to record without "
                 "--alloc: add --alloc, or drop --no-cpu");
    }
    st.o.event = sampler::NoSamplesEvent();
  }
  ResolveOutputs(&st);
  return std::move(st.o);
}

}  // namespace nativeprof::tools
