#include "tools/off_cpu_report.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "output/text_report.h"

namespace nativeprof::tools {

std::vector<ThreadSplit> ThreadSplits(const unwind::StackCollector& collector) {
  const absl::flat_hash_map<int32_t, uint64_t> on_cpu = collector.CpuWeightByTid();
  std::vector<ThreadSplit> out;
  for (const unwind::ThreadTimes& t : collector.off_cpu().Threads()) {
    ThreadSplit split;
    split.times = t;
    split.name = collector.processes().ThreadName(t.pid, t.tid);
    split.on_cpu_ns = t.on_cpu_ns();
    if (auto it = on_cpu.find(t.tid); it != on_cpu.end()) split.sampled_on_cpu_ns = it->second;
    out.push_back(std::move(split));
  }
  return out;
}

std::vector<ViewOutput> OffCpuOutputs(const RecordOptions& o) {
  std::vector<ViewOutput> out;
  for (const RecordOutput& r : o.outputs) {
    if (r.format == output::OutputFormat::kPprof) {
      out.push_back({r.path, r.format, symbolize::ProfileView::kWall});  // all three sample types
      continue;
    }
    if (r.format == output::OutputFormat::kSpeedscope) {
      // The timeline of both halves in the file named, each half alone beside it.
      out.push_back({r.path, r.format, symbolize::ProfileView::kWall});
      out.push_back(
          {RecordOptions::ViewPath(r.path, kCpuView), r.format, symbolize::ProfileView::kCpu});
      out.push_back({RecordOptions::ViewPath(r.path, kOffCpuView), r.format,
                     symbolize::ProfileView::kOffCpu});
      continue;
    }
    out.push_back({r.path, r.format, symbolize::ProfileView::kCpu});
    out.push_back(
        {RecordOptions::ViewPath(r.path, kOffCpuView), r.format, symbolize::ProfileView::kOffCpu});
    if (o.wall) {
      out.push_back(
          {RecordOptions::ViewPath(r.path, kWallView), r.format, symbolize::ProfileView::kWall});
    }
  }
  return out;
}

nlohmann::json OffCpuJson(const RecordOptions& o, const unwind::StackCollector& collector,
                          const std::vector<ThreadSplit>& threads,
                          const std::string& sampling_event) {
  // The CPU samples' periods are nanoseconds only for a clock; another event's (-e page-faults,
  // cycles on hardware that has them) count that event.
  const bool sampled_ns = sampling_event == "cpu-clock" || sampling_event == "task-clock";
  nlohmann::json j;
  j["unit"] = "nanoseconds";
  j["folded_unit"] = "microseconds";
  j["switch_samples"] = collector.stats().switch_samples;
  j["switch_stack_bytes"] = o.switch_stack_bytes.value_or(
      o.call_graph == unwind::CallGraphMode::kDwarf ? o.dwarf_stack_bytes : 0);
  uint64_t blocked = 0, waiting = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const ThreadSplit& t : threads) {
    blocked += t.times.blocked_ns;
    waiting += t.times.waiting_ns;
    list.push_back({{"pid", t.times.pid},
                    {"tid", t.times.tid},
                    {"name", t.name},
                    {"lifetime_ns", t.lifetime_ns()},
                    {"on_cpu_ns", t.on_cpu_ns},
                    {sampled_ns ? "on_cpu_sampled_ns" : "on_cpu_sampled_events",
                     t.sampled_on_cpu_ns},
                    {"blocked_ns", t.times.blocked_ns},
                    {"waiting_ns", t.times.waiting_ns},
                    {"switches", t.times.switches},
                    {"ran", t.times.ran},
                    {"exited", t.times.exited}});
  }
  j["blocked_ns"] = blocked;
  j["waiting_ns"] = waiting;
  j["threads"] = std::move(list);
  nlohmann::json files = nlohmann::json::array();
  for (const ViewOutput& v : OffCpuOutputs(o)) {
    const char* view = v.view == symbolize::ProfileView::kCpu      ? "cpu"
                       : v.view == symbolize::ProfileView::kOffCpu ? "off-cpu"
                                                                   : "wall";
    files.push_back({{"path", v.path}, {"view", view}});
  }
  j["outputs"] = std::move(files);
  return j;
}

std::vector<std::string> OffCpuSummaryLines(const unwind::StackCollector& collector,
                                            const std::vector<ThreadSplit>& threads,
                                            uint64_t lost_records) {
  // A process of thousands of threads must not make one line of thousands of names.
  constexpr size_t kMaxNamed = 10;
  uint64_t blocked = 0, waiting = 0;
  std::vector<std::string> idle;
  size_t idle_count = 0;
  for (const ThreadSplit& t : threads) {
    blocked += t.times.blocked_ns;
    waiting += t.times.waiting_ns;
    if (t.times.ran) continue;
    if (++idle_count <= kMaxNamed) {
      idle.push_back(absl::StrCat(t.name.empty() ? "?" : t.name, "/", t.times.tid));
    }
  }
  std::vector<std::string> lines;
  // A lost switch-in leaves its thread counted off-CPU until the next record of it: with losses
  // the split leans to off-CPU, and a thread whose every record was lost looks as if it never ran.
  lines.push_back(absl::StrFormat(
      "off-CPU: %d switches, %.3f s blocked, %.3f s waiting for a CPU%s",
      collector.stats().switch_samples, static_cast<double>(blocked) * 1e-9,
      static_cast<double>(waiting) * 1e-9,
      lost_records == 0 ? ""
                        : absl::StrCat(" (upper bounds: with ", output::WithThousands(lost_records),
                                       " records lost, time whose switch-in was lost counts as "
                                       "off-CPU)")));
  if (idle_count > 0) {
    lines.push_back(absl::StrCat(
        output::Plural(idle_count, "thread", "threads"),
        lost_records == 0 ? " never ran while recording (off-CPU throughout): "
                          : " never ran while recording, or ran with every record of theirs "
                            "lost: ",
        absl::StrJoin(idle, ", "),
        idle_count > idle.size() ? absl::StrCat(" and ", idle_count - idle.size(), " more")
                                 : "",
        " (all in the metadata's off_cpu.threads)"));
  }
  return lines;
}

}  // namespace nativeprof::tools
