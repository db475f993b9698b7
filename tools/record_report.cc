#include "tools/record_report.h"

#include <cstdio>
#include <optional>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "output/alloc_tables.h"
#include "output/counter_report.h"
#include "output/frame_modules.h"
#include "output/json_util.h"
#include "output/profile_writer.h"
#include "output/text_report.h"
#include "symbolize/profile_builder.h"
#include "tools/cli_error.h"
#include "tools/output_fallback.h"
#include "tools/off_cpu_report.h"
#include "unwind/dwarf_stack_size.h"
#include "unwind/kernel_callchain.h"

namespace nativeprof::tools {
namespace {

void PrintLine(const std::string& line) { std::fprintf(stderr, "nativeprof: %s\n", line.c_str()); }

const char* CallGraphName(const RecordOptions& o) {
  return o.call_graph == unwind::CallGraphMode::kDwarf ? "dwarf" : "fp";
}

// What the summary says about each problem's fix, from this run's options and scheduling.
output::QualityContext QualityContextFor(const RecordOptions& o, const RunState& state,
                                         uint64_t lost) {
  output::QualityContext c;
  c.dwarf = o.call_graph == unwind::CallGraphMode::kDwarf;
  c.dwarf_stack_bytes = o.dwarf_stack_bytes;
  c.switch_stack_bytes = o.switch_stack_bytes.value_or(o.dwarf_stack_bytes);
  // fp stacks end where the kernel stopped its walk; DWARF stacks at the unwinder's own cap.
  c.depth_limit = c.dwarf ? absl::StrCat(unwind::kMaxFrames, " frames")
                          : absl::StrCat(unwind::KernelMaxStack(),
                                         " frames (/proc/sys/kernel/perf_event_max_stack)");
  if (lost > 0) c.lost_line = LostRecordsLine(lost, state, o.off_cpu);
  return c;
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

std::string LostRecordsLine(uint64_t lost, const RunState& state, bool off_cpu) {
  const DrainScheduling& d = state.scheduling;
  if (!d.wait_seconds.has_value() || state.duration_seconds <= 0 ||
      *d.wait_seconds < kStarvedWaitShare * state.duration_seconds) {
    // With --off-cpu every switch copies a stack: copying less of it frees the most room.
    return absl::StrCat(lost, " records lost because the ring buffer was full; try a larger -m",
                        off_cpu ? ", a lower -F, or less stack per switch (--off-cpu-stack 0 "
                                  "keeps only the kernel's frame-pointer chain)"
                                : " or a lower -F");
  }
  // A larger ring would only fill later: the drain thread was runnable but not running.
  std::string fix;
  if (d.boost_disabled) {
    fix = "drop --no-boost so it can raise its priority, or lower -F";
  } else if (d.boost.kind == PriorityKind::kRealtime) {
    fix = absl::StrCat("it ran at ", d.boost.Describe(),
                       " and still waited (other real-time tasks or RT throttling); lower -F");
  } else if (d.boost.kind == PriorityKind::kNice && d.realtime_skipped) {
    fix = absl::StrCat("it ran at ", d.boost.Describe(),
                       " (with --off-cpu not SCHED_FIFO, which would preempt the target at each "
                       "switch); lower -F, or copy less stack per switch with --off-cpu-stack");
  } else if (d.boost.kind == PriorityKind::kNice) {
    fix = absl::StrCat("it ran at ", d.boost.Describe(),
                       "; run as root / with CAP_SYS_NICE so it can use SCHED_FIFO, or lower -F");
  } else {
    fix = absl::StrCat("run as root / with CAP_SYS_NICE so it can raise its priority, or lower -F",
                       off_cpu ? ", or copy less stack per switch with --off-cpu-stack" : "");
  }
  return absl::StrFormat("%d records lost while nativeprof waited %.0f ms for a CPU (machine "
                         "saturated): %s",
                         lost, *d.wait_seconds * 1e3, fix);
}

std::optional<std::string> SampleCoverageLine(uint64_t sampled_ns,
                                              const std::vector<sampler::CounterValue>& counters,
                                              uint64_t frequency_hz) {
  constexpr double kMinTaskClockNs = 100e6;
  for (const sampler::CounterValue& c : counters) {
    if (c.event.name != "task-clock" || !c.supported || !c.counted) continue;
    const double task_clock_ns = c.scaled;
    if (task_clock_ns < kMinTaskClockNs || static_cast<double>(sampled_ns) >= 0.5 * task_clock_ns) {
      return std::nullopt;
    }
    return absl::StrFormat(
        "the samples cover %.0f%% of the command's CPU time (%.0f of %.0f ms task-clock): "
        "processes or threads that each run less than a sampling period (%.1f ms at -F %d) are "
        "mostly missed; raise -F",
        100.0 * static_cast<double>(sampled_ns) / task_clock_ns,
        static_cast<double>(sampled_ns) / 1e6, task_clock_ns / 1e6,
        frequency_hz == 0 ? 0.0 : 1e3 / static_cast<double>(frequency_hz), frequency_hz);
  }
  return std::nullopt;
}

nlohmann::json RecordMetadata(const RecordOptions& o, const sampler::Session& session,
                              const unwind::StackCollector& collector,
                              const output::RecordingQuality& quality,
                              const std::vector<sampler::CounterValue>& counters,
                              const RunState& state) {
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
  j["samples"] = quality.samples;
  j["processes"] = collector.processes().process_count();
  j["threads"] = collector.processes().thread_count();
  // An attached process is not nativeprof's child: its exit status cannot be known.
  j["exit_code"] = o.pids.empty() ? nlohmann::json(state.exit_code) : nlohmann::json();
  j["interrupted"] = state.interrupted;
  j["ring"] = {{"cpus", session.ring_count()}, {"data_pages_per_cpu", session.ring_pages()}};
  j["scheduling"] = SchedulingJson(state.scheduling);
  output::AddRecordingQualityJson(quality, &j);
  nlohmann::json outputs = nlohmann::json::array();
  for (const RecordOutput& out : o.outputs) {
    if (!o.cpu_samples()) break;  // --no-cpu: the allocation views are listed under "allocations"
    outputs.push_back({{"path", out.path}, {"format", output::OutputFormatName(out.format)}});
  }
  j["outputs"] = outputs;
  if (!counters.empty()) j["counters"] = output::CountersToJson(counters, state.duration_seconds);
  return j;
}

std::vector<RecordFile> RecordFiles(const RecordOptions& o) {
  std::vector<RecordFile> files;
  for (const RecordOutput& out : o.outputs) {
    RecordOptions one = o;
    one.outputs = {out};
    if (o.cpu_samples() && !o.off_cpu) files.push_back({out.path, out.path});
    if (o.cpu_samples() && o.off_cpu) {
      for (const ViewOutput& v : OffCpuOutputs(one)) files.push_back({v.path, out.path});
    }
    if (o.alloc_rate_bytes.has_value()) {
      for (const ViewOutput& v : AllocOutputs(one)) files.push_back({v.path, out.path});
    }
  }
  files.push_back({o.MetadataPath(), o.outputs.front().path});
  return files;
}

absl::Status CheckOutputsSpareFiles(const RecordOptions& o, const std::string& program) {
  for (const RecordFile& f : RecordFiles(o)) {
    const std::string which =
        f.path == f.output ? "-o " : absl::StrCat("a file written beside -o ", f.output, ", ");
    if (SameRegularFile(f.path, program)) {
      return absl::InvalidArgumentError(absl::StrCat(
          which, f.path, " is the program to be profiled, which the profile would replace"));
    }
    if (absl::Status st = CheckNotOverwritingNonProfile(f.path); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(which, st.message(), "; nothing was overwritten"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOutputsApart(const RecordOptions& o) {
  const std::vector<RecordFile> files = RecordFiles(o);
  // The file each path names, however spelled ("a.folded", "./a.folded", "$PWD/a.folded", a
  // symlinked directory): one written over another was lost without a word.
  std::vector<std::string> names;
  names.reserve(files.size());
  for (const RecordFile& f : files) names.push_back(CanonicalFileName(f.path));
  for (size_t i = 0; i < files.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (names[i] != names[j]) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "-o ", files[j].output, " and -o ", files[i].output, " would both write ",
          files[i].path, "; give the outputs names apart"));
    }
  }
  return absl::OkStatus();
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
  symbolize::ProfileBuilder builder(collector, symbolizer);
  symbolize::Profile profile = builder.Build(build);
  const symbolize::SymbolizationStats symbols = symbolizer.Stats();

  int exit_code = state.exit_code;
  OutputFallback fallback;
  // An -o that names a stream (/dev/stdout, /dev/null, a FIFO) gets its own view only: the
  // files named after it (the other views, the metadata) have no directory to go beside it.
  std::vector<std::string> beside_streams;
  for (const RecordFile& f : RecordFiles(o)) {
    if (f.path != f.output && IsStreamPath(f.output)) beside_streams.push_back(f.path);
  }
  std::vector<std::string> not_written;
  auto beside_a_stream = [&](const std::string& path) {
    if (absl::c_any_of(o.outputs, [&](const RecordOutput& out) { return out.path == path; }) ||
        !absl::c_linear_search(beside_streams, path)) {
      return false;
    }
    not_written.push_back(path);
    return true;
  };
  auto write = [&](const symbolize::Profile& p, const std::string& path,
                   output::OutputFormat format) {
    if (beside_a_stream(path)) return;
    fallback.Write(
        path, [&](const std::string& to) { return output::WriteProfile(p, to, format, o.write); },
        &exit_code);
  };
  std::vector<ThreadSplit> threads;
  const symbolize::Profile* frame_modules_of = &profile;
  std::optional<symbolize::Profile> views[2];  // --off-cpu: off-CPU, wall; built when first needed
  std::optional<symbolize::Profile> alloc_sites;  // the first allocation view (all sampled sites)
  if (!o.cpu_samples()) {
    // No CPU profile to write: an empty file beside the allocation views would only mislead.
  } else if (!session.off_cpu()) {
    for (const RecordOutput& out : o.outputs) write(profile, out.path, out.format);
  } else {
    threads = ThreadSplits(collector);
    auto view_of = [&](symbolize::ProfileView view) -> const symbolize::Profile& {
      std::optional<symbolize::Profile>& p = views[view == symbolize::ProfileView::kOffCpu ? 0 : 1];
      if (!p.has_value()) {
        symbolize::ProfileBuildOptions b = build;
        b.view = view;
        p = builder.Build(b);
      }
      return *p;
    };
    for (const ViewOutput& v : OffCpuOutputs(o)) {
      write(v.view == symbolize::ProfileView::kCpu ? profile : view_of(v.view), v.path, v.format);
    }
    // The wall view names every frame of both halves: `report` of an off-CPU file needs them.
    frame_modules_of = &view_of(symbolize::ProfileView::kWall);
  }
  if (state.alloc.has_value()) {
    for (const ViewOutput& v : AllocOutputs(o)) {
      symbolize::ProfileBuildOptions b = build;
      b.view = v.view;
      b.timeline = false;
      b.merge_threads = v.format == output::OutputFormat::kFolded ||
                        v.format == output::OutputFormat::kSvg;
      symbolize::Profile p = builder.Build(b);
      // pprof's flat cost on the program's calls, as `report` ranks them (the full stacks are
      // the folded views').
      write(v.view == symbolize::ProfileView::kHeap ? output::AllocSiteStacks(p) : p, v.path,
            v.format);
      if (!alloc_sites.has_value()) alloc_sites = std::move(p);
    }
  }
  const output::RecordingQuality quality =
      output::CollectRecordingQuality(session.stats(), collector, symbols, profile);
  nlohmann::json metadata = RecordMetadata(o, session, collector, quality, counters, state);
  // Folded files keep names only; this lets `report --by module` tell libc.so.6 from the binary,
  // and `report` of an allocation view step over the C library's frames. The frames of the
  // allocation sites are named too (without CPU samples, only they are).
  std::vector<const symbolize::Profile*> frame_module_sources;
  if (o.cpu_samples()) frame_module_sources.push_back(frame_modules_of);
  if (alloc_sites.has_value()) frame_module_sources.push_back(&*alloc_sites);
  if (frame_module_sources.empty()) frame_module_sources.push_back(&profile);
  metadata["frame_modules"] = output::FrameModulesJson(frame_module_sources);
  if (session.off_cpu()) {
    metadata["off_cpu"] = OffCpuJson(o, collector, threads, session.event().name);
  }
  if (state.alloc.has_value()) metadata["allocations"] = AllocJson(o, *state.alloc, collector);
  // An output that went to the fallback directory is listed where it is.
  auto relocate = [&](nlohmann::json& files) {
    for (nlohmann::json& file : files) {
      if (!file.contains("path")) continue;
      file["path"] = fallback.WrittenPath(file["path"].get<std::string>());
    }
  };
  relocate(metadata["outputs"]);
  for (const char* section : {"off_cpu", "allocations"}) {
    if (metadata.contains(section)) relocate(metadata[section]["outputs"]);
  }
  const std::string metadata_text = output::RenderJsonDocument(metadata) + "\n";
  if (!beside_a_stream(o.MetadataPath())) {
    fallback.Write(
        o.MetadataPath(),
        [&](const std::string& to) { return WriteFileAtomically(to, metadata_text); },
        &exit_code);
  }
  // Nothing to say to who sent the profile to /dev/null.
  const bool all_discarded = absl::c_all_of(o.outputs, [](const RecordOutput& out) {
    return out.path == "/dev/null";
  });
  if (!not_written.empty() && !all_discarded) {
    PrintLine(absl::StrCat("not written: ", absl::StrJoin(not_written, ", "),
                           " (an -o that is not a file, such as /dev/stdout, gets its own view "
                           "only); give -o FILE for them"));
  }

  if (!counters.empty()) {
    std::fputs(output::FormatCounterTable(counters, state.duration_seconds).c_str(), stderr);
  }
  const uint64_t lost = quality.lost_records + quality.lost_samples;
  for (const std::string& line :
       output::RecordingQualityLines(quality, QualityContextFor(o, state, lost))) {
    PrintLine(line);
  }
  if (o.cpu_samples() && build.weight_unit == "nanoseconds" && o.pids.empty()) {
    uint64_t sampled_ns = 0;
    for (const auto& [tid, ns] : collector.CpuWeightByTid()) sampled_ns += ns;
    if (std::optional<std::string> line = SampleCoverageLine(sampled_ns, counters, o.frequency_hz)) {
      PrintLine(*line);
    }
  }
  if (session.off_cpu()) {
    for (const std::string& line : OffCpuSummaryLines(collector, threads, lost)) PrintLine(line);
  }
  if (state.alloc.has_value()) {
    for (const std::string& line : AllocSummaryLines(*state.alloc)) PrintLine(line);
  }
  const std::string threads_and_processes = absl::StrCat(
      output::Plural(collector.processes().thread_count(), "thread", "threads"), ", ",
      output::Plural(collector.processes().process_count(), "process", "processes"));
  if (!o.cpu_samples()) {
    const std::vector<ViewOutput> alloc_views = AllocOutputs(o);
    PrintLine(absl::StrFormat("no CPU samples (--no-cpu), %d lost, %.2f s, %s -> %s", lost,
                              state.duration_seconds, threads_and_processes,
                              fallback.Describe(alloc_views.empty() ? o.MetadataPath()
                                                                    : alloc_views.front().path)));
    return exit_code;
  }
  PrintLine(absl::StrFormat("%s, %d lost, %.2f s, %s -> %s",
                            output::Plural(quality.samples, "sample", "samples"), lost,
                            state.duration_seconds, threads_and_processes,
                            fallback.Describe(o.outputs.front().path)));
  return exit_code;
}

}  // namespace nativeprof::tools
