#include "tools/record_report.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/text_escape.h"
#include "output/counter_report.h"
#include "output/frame_modules.h"
#include "output/json_util.h"
#include "output/profile_writer.h"
#include "symbolize/profile_builder.h"
#include "tools/cli_error.h"
#include "unwind/dwarf_stack_size.h"
#include "unwind/kernel_callchain.h"

namespace nativeprof::tools {
namespace {

void PrintLine(const std::string& line) { std::fprintf(stderr, "nativeprof: %s\n", line.c_str()); }

std::string Plural(uint64_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

const char* CallGraphName(const RecordOptions& o) {
  return o.call_graph == unwind::CallGraphMode::kDwarf ? "dwarf" : "fp";
}

// Warnings for anything that made the profile less complete than it looks.
// Share of sampled frames (each stack's frames weighted by its samples) that got a name;
// "[libfoo.so]" and "[unknown]" are the unnamed ones (and "module+0x..." with --addresses).
double NamedFrameShare(const symbolize::Profile& profile) {
  uint64_t total = 0, named = 0;
  std::vector<bool> frame_named(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const std::string& f = profile.frames[i].function;
    frame_named[i] = !f.empty() && f[0] != '[' && f.find("+0x") == std::string::npos;
  }
  for (const symbolize::ProfileStack& s : profile.stacks) {
    for (uint32_t f : s.frames) {
      total += s.samples;
      if (frame_named[f]) named += s.samples;
    }
  }
  return total == 0 ? 1.0 : static_cast<double>(named) / static_cast<double>(total);
}

void PrintQualityWarnings(const RecordOptions& o, const unwind::StackCollector& collector,
                          const symbolize::SymbolizationStats& symbols, double named_share,
                          const RunState& state) {
  const unwind::CollectorStats& s = collector.stats();
  const uint64_t lost = s.lost_records + s.lost_samples;
  if (lost > 0) PrintLine(LostRecordsLine(lost, state));
  const uint64_t truncated = s.ends[static_cast<size_t>(unwind::StackEnd::kTruncatedStack)];
  if (truncated > 0) {
    PrintLine(absl::StrCat(Plural(truncated, "stack", "stacks"), " truncated at ",
                           o.dwarf_stack_bytes, " bytes", s.spliced ? " (" : "",
                           s.spliced ? absl::StrCat(s.spliced, " completed by the kernel chain)") : "",
                           " - try --call-graph dwarf,",
                           std::min(o.dwarf_stack_bytes * 2, unwind::kMaxDwarfStackSize)));
  }
  const uint64_t max_depth = s.ends[static_cast<size_t>(unwind::StackEnd::kMaxDepth)];
  if (max_depth > 0) {
    // fp stacks end where the kernel stopped its walk; DWARF stacks at the unwinder's own cap.
    const std::string limit =
        o.call_graph == unwind::CallGraphMode::kFramePointer
            ? absl::StrCat(unwind::KernelMaxStack(),
                           " frames (/proc/sys/kernel/perf_event_max_stack)")
            : absl::StrCat(unwind::kMaxFrames, " frames");
    PrintLine(absl::StrCat(Plural(max_depth, "stack", "stacks"), " hit the depth limit of ",
                           limit));
  }
  for (int e = 0; e < unwind::kStackEndCount; ++e) {
    auto end = static_cast<unwind::StackEnd>(e);
    if (end == unwind::StackEnd::kComplete || end == unwind::StackEnd::kTruncatedStack ||
        end == unwind::StackEnd::kMaxDepth || s.ends[e] == 0 ||
        o.call_graph == unwind::CallGraphMode::kFramePointer) {
      continue;
    }
    PrintLine(absl::StrCat(Plural(s.ends[e], "stack", "stacks"), " ended early: ",
                           unwind::StackEndName(end)));
  }
  if (symbols.addresses > 0 && symbols.named < symbols.addresses) {
    PrintLine(absl::StrFormat("%.1f%% of sampled frames named (%d of %d distinct addresses)",
                              100.0 * named_share, symbols.named, symbols.addresses));
    int shown = 0;
    for (const auto& miss : symbols.worst_modules) {
      if (shown++ == 3) break;
      // The module's path is the kernel's copy of a file name: any bytes but '/' and NUL.
      PrintLine(absl::StrCat("  ", EscapeForMessage(miss.module, kMaxQuotedPathBytes), ": ",
                             miss.unnamed, " unnamed (", miss.reason, ")",
                             miss.advice.empty() ? "" : absl::StrCat("; ", miss.advice)));
    }
  }
  for (const std::string& w : symbols.warnings) PrintLine(w);
}

nlohmann::json SchedulingJson(const DrainScheduling& d) {
  nlohmann::json j = {{"priority", d.boost.Describe()}};
  if (d.boost.kind == PriorityKind::kUnchanged) {
    j["priority_note"] = d.boost_disabled ? "--no-boost" : d.boost.why;
  }
  auto ms = [](double seconds) { return seconds * 1e3; };
  if (d.wait_seconds.has_value()) j["run_queue_wait_ms"] = ms(*d.wait_seconds);
  if (d.on_cpu_seconds.has_value()) j["on_cpu_ms"] = ms(*d.on_cpu_seconds);
  if (d.setup_wait_seconds.has_value()) j["setup_run_queue_wait_ms"] = ms(*d.setup_wait_seconds);
  if (d.startup_seconds.has_value()) j["startup_ms"] = ms(*d.startup_seconds);
  return j;
}

}  // namespace

std::string LostRecordsLine(uint64_t lost, const RunState& state) {
  const DrainScheduling& d = state.scheduling;
  if (!d.wait_seconds.has_value() || state.duration_seconds <= 0 ||
      *d.wait_seconds < kStarvedWaitShare * state.duration_seconds) {
    return absl::StrCat(lost, " records lost because the ring buffer was full; try a larger -m ",
                        "or a lower -F");
  }
  // A larger ring would only fill later: the drain thread was runnable but not running.
  std::string fix;
  if (d.boost_disabled) {
    fix = "drop --no-boost so it can raise its priority, or lower -F";
  } else if (d.boost.kind == PriorityKind::kRealtime) {
    fix = absl::StrCat("it ran at ", d.boost.Describe(),
                       " and still waited (other real-time tasks or RT throttling); lower -F");
  } else if (d.boost.kind == PriorityKind::kNice) {
    fix = absl::StrCat("it ran at ", d.boost.Describe(),
                       "; run as root / with CAP_SYS_NICE so it can use SCHED_FIFO, or lower -F");
  } else {
    fix = "run as root / with CAP_SYS_NICE so it can raise its priority, or lower -F";
  }
  return absl::StrFormat("%d records lost while nativeprof waited %.0f ms for a CPU (machine "
                         "saturated): %s",
                         lost, *d.wait_seconds * 1e3, fix);
}

nlohmann::json RecordMetadata(const RecordOptions& o, const sampler::Session& session,
                              const unwind::StackCollector& collector,
                              const symbolize::SymbolizationStats& symbols,
                              const std::vector<sampler::CounterValue>& counters,
                              const RunState& state) {
  const unwind::CollectorStats& s = collector.stats();
  nlohmann::json j;
  j["tool"] = "nativeprof";
  j["version"] = NATIVEPROF_VERSION_STRING;
  j["command"] = o.command;
  if (!o.pids.empty()) j["pids"] = o.pids;
  j["event"] = session.event().name;
  j["requested_event"] = o.event.name;
  j["notes"] = session.notes();
  j["frequency_hz"] = o.frequency_hz;
  j["weight_unit"] = "samples";
  j["call_graph"] = CallGraphName(o);
  if (o.call_graph == unwind::CallGraphMode::kDwarf) j["dwarf_stack_bytes"] = o.dwarf_stack_bytes;
  j["kernel_sampled"] = session.kernel_sampled();
  j["duration_seconds"] = state.duration_seconds;
  j["samples"] = s.samples;
  j["lost"] = {{"records", s.lost_records}, {"samples", s.lost_samples}};
  j["throttled"] = s.throttled;
  j["processes"] = collector.processes().process_count();
  j["threads"] = collector.processes().thread_count();
  j["exit_code"] = state.exit_code;
  j["interrupted"] = state.interrupted;
  j["ring"] = {{"cpus", session.ring_count()}, {"data_pages_per_cpu", session.ring_pages()},
               {"records", session.stats().records}, {"bytes", session.stats().bytes},
               {"corrupt_batches", session.stats().corrupt_batches},
               {"parse_errors", session.stats().parse_errors}};
  j["scheduling"] = SchedulingJson(state.scheduling);
  nlohmann::json ends = nlohmann::json::object();
  for (int e = 0; e < unwind::kStackEndCount; ++e) {
    ends[unwind::StackEndName(static_cast<unwind::StackEnd>(e))] = s.ends[e];
  }
  j["unwind"] = {{"frames", s.frames},
                 {"kernel_frames", s.kernel_frames},
                 {"unmapped_frames", s.unmapped_frames},
                 {"spliced", s.spliced},
                 {"ends", ends}};
  nlohmann::json worst = nlohmann::json::array();
  for (const auto& m : symbols.worst_modules) {
    worst.push_back(
        {{"module", m.module}, {"unnamed", m.unnamed}, {"reason", m.reason}, {"advice", m.advice}});
  }
  j["symbolization"] = {{"addresses", symbols.addresses},
                        {"named", symbols.named},
                        {"worst_modules", worst},
                        {"warnings", symbols.warnings}};
  nlohmann::json outputs = nlohmann::json::array();
  for (const RecordOutput& out : o.outputs) {
    outputs.push_back({{"path", out.path}, {"format", output::OutputFormatName(out.format)}});
  }
  j["outputs"] = outputs;
  if (!counters.empty()) j["counters"] = output::CountersToJson(counters, state.duration_seconds);
  return j;
}

std::unique_ptr<symbolize::Symbolizer> MakeRecordingSymbolizer(const RecordOptions& o,
                                                               unwind::StackCollector& collector) {
  std::unique_ptr<symbolize::Symbolizer> symbolizer =
      symbolize::MakeSymbolizer(collector.modules(), o.symbolizer);
  symbolize::Symbolizer* s = symbolizer.get();
  collector.set_mapping_observer([s](const sampler::MmapView& m, sampler::ModuleId module) {
    const auto pid = static_cast<int32_t>(m.pid);
    if (m.filename == "[vdso]") {
      s->NoteVdso(pid, m.start_avma, m.start_avma + m.length);
    } else if (!m.filename.empty() && m.filename[0] == '/') {
      s->NoteMapping(pid, module, m.start_avma, m.start_avma + m.length);
    }
  });
  return symbolizer;
}

int FinishRecording(const RecordOptions& o, const sampler::Session& session,
                    const unwind::StackCollector& collector, symbolize::Symbolizer& symbolizer,
                    const std::vector<sampler::CounterValue>& counters, const RunState& state) {
  symbolize::ProfileBuildOptions build;
  build.event = session.event().name;
  build.weight_unit = (session.event().name == "cpu-clock" || session.event().name == "task-clock")
                          ? "nanoseconds"
                          : "events";
  build.sample_frequency_hz = o.frequency_hz;
  build.duration_ns = static_cast<uint64_t>(state.duration_seconds * 1e9);
  build.timeline = true;
  symbolize::Profile profile = symbolize::BuildProfile(collector, symbolizer, build);
  const symbolize::SymbolizationStats symbols = symbolizer.Stats();

  int exit_code = state.exit_code;
  for (const RecordOutput& out : o.outputs) {
    absl::Status st = output::WriteProfile(profile, out.path, out.format, o.write);
    if (!st.ok()) {
      exit_code = PrintCliError(CliStep::kWriteOutput, st, absl::StrCat("cannot write ", out.path));
    }
  }
  const double named_share = NamedFrameShare(profile);
  nlohmann::json metadata = RecordMetadata(o, session, collector, symbols, counters, state);
  metadata["symbolization"]["named_frame_share"] = named_share;
  // Folded files keep names only; this lets `report --by module` tell libc.so.6 from the binary.
  metadata["frame_modules"] = output::FrameModulesJson(profile);
  if (absl::Status st =
          WriteFileAtomically(o.MetadataPath(), output::RenderJsonDocument(metadata) + "\n");
      !st.ok()) {
    exit_code =
        PrintCliError(CliStep::kWriteOutput, st, absl::StrCat("cannot write ", o.MetadataPath()));
  }

  if (!counters.empty()) {
    std::fputs(output::FormatCounterTable(counters, state.duration_seconds).c_str(), stderr);
  }
  PrintQualityWarnings(o, collector, symbols, named_share, state);
  const unwind::CollectorStats& s = collector.stats();
  PrintLine(absl::StrFormat("%d samples, %d lost, %.2f s, %s, %s -> %s", s.samples,
                            s.lost_records + s.lost_samples, state.duration_seconds,
                            Plural(collector.processes().thread_count(), "thread", "threads"),
                            Plural(collector.processes().process_count(), "process", "processes"),
                            o.outputs.front().path));
  return exit_code;
}

}  // namespace nativeprof::tools
