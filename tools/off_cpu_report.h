// The --off-cpu part of the end of a recording: the off-CPU and wall views written beside each
// output, the per-thread on/off-CPU table for the metadata JSON, and the summary lines. Main
// thread, after sampling stopped and the off-CPU tracker was finished.
#ifndef NATIVEPROF_TOOLS_OFF_CPU_REPORT_H_
#define NATIVEPROF_TOOLS_OFF_CPU_REPORT_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "symbolize/profile.h"
#include "symbolize/profile_builder.h"
#include "symbolize/symbolizer.h"
#include "tools/record_options.h"
#include "unwind/stack_collector.h"

namespace nativeprof::tools {

// One thread's split of its lifetime in the recording.
struct ThreadSplit {
  unwind::ThreadTimes times;
  std::string name;
  uint64_t on_cpu_ns = 0;          // times.on_cpu_ns(): exact from the switch records
  uint64_t sampled_on_cpu_ns = 0;  // the thread's CPU samples' periods (an estimate)
  uint64_t lifetime_ns() const { return times.lifetime_ns(); }
};

std::vector<ThreadSplit> ThreadSplits(const unwind::StackCollector& collector);

// The views an output gets: pprof and speedscope hold everything in one file (the wall view:
// cpu, off_cpu and wall time), folded and SVG get the CPU view at the path given and the
// off-CPU (and with --wall, the wall) view beside it (RecordOptions::ViewPath).
struct ViewOutput {
  std::string path;
  output::OutputFormat format;
  symbolize::ProfileView view;
};
std::vector<ViewOutput> OffCpuOutputs(const RecordOptions& options);

// "off_cpu" in the metadata JSON: switches, per-thread split, the files written.
// `sampling_event`: the event CPU samples were taken of (after any fallback).
nlohmann::json OffCpuJson(const RecordOptions& options, const unwind::StackCollector& collector,
                          const std::vector<ThreadSplit>& threads,
                          const std::string& sampling_event);

// The summary lines: total off-CPU time (blocked / waiting), threads that never ran.
std::vector<std::string> OffCpuSummaryLines(const unwind::StackCollector& collector,
                                            const std::vector<ThreadSplit>& threads,
                                            uint64_t lost_records);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_OFF_CPU_REPORT_H_
