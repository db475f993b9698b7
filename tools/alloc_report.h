// The --alloc part of the end of a recording: the allocation views written beside each output,
// the "allocations" section of the metadata JSON (exact totals, estimates, the live heap over
// time, the files), and heaptrack-like summary lines. Main thread, after the last drain and
// AllocTracker::Finish.
#ifndef NATIVEPROF_TOOLS_ALLOC_REPORT_H_
#define NATIVEPROF_TOOLS_ALLOC_REPORT_H_

#include <span>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sampler/alloc_channel.h"
#include "tools/off_cpu_report.h"
#include "tools/record_options.h"
#include "unwind/stack_collector.h"

namespace nativeprof::tools {

// What the run measured beside the preload's totals.
// One process's own heap, with its command name (its main thread's last comm).
struct NamedProcessHeap {
  sampler::ProcessHeap heap;
  std::string command;
};

struct AllocRun {
  sampler::AllocTotals totals;
  std::vector<NamedProcessHeap> process_heaps;  // AllocChannel::ProcessHeaps' order
  // Images started by an exec that never loaded the preload (AllocChannel::ImageAttached):
  // (pid, command), by pid.
  std::vector<std::pair<uint32_t, std::string>> unhooked;
  uint64_t rate_bytes = 0;
  double duration_seconds = 0;
  uint64_t peak_rss_bytes = 0;  // of the largest profiled process; 0 when unknown
  std::vector<std::pair<uint64_t, uint64_t>> live_over_time;  // AllocChannel::live_over_time
};

// One allocation view's file name (record_options.h) and what it shows; its unit is
// symbolize::AllocViewUnit(view).
struct AllocView {
  const char* name;
  symbolize::ProfileView view;
  const char* metric;  // "bytes allocated"
};
std::span<const AllocView> AllocViews();
// The view named `name`, or null.
const AllocView* FindAllocView(const std::string& name);

// Folded and SVG outputs get one file per view (OUT.alloc.*, .allocs, .temporary, .peak,
// .leaked); pprof gets OUT.heap.pb.gz with every figure; speedscope gets OUT.alloc.*.
std::vector<ViewOutput> AllocOutputs(const RecordOptions& options);

nlohmann::json AllocJson(const RecordOptions& options, const AllocRun& run,
                         const unwind::StackCollector& collector);

// The summary: calls, bytes, temporary, peak heap and RSS, leaked, sampling; plus one line when
// the preload saw nothing (not loaded) or far less than the RSS grew (a custom allocator).
std::vector<std::string> AllocSummaryLines(const AllocRun& run);

// "62.9 MB", "10,000 B": decimal units, as heaptrack prints them.
std::string FormatBytes(double bytes);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_ALLOC_REPORT_H_
