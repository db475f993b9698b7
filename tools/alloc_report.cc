#include "tools/alloc_report.h"

#include <algorithm>
#include <cmath>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "output/text_report.h"

namespace nativeprof::tools {
namespace {

constexpr AllocView kViews[] = {
    {kAllocBytesView, symbolize::ProfileView::kAllocBytes, "bytes allocated"},
    {kAllocCountView, symbolize::ProfileView::kAllocCount, "allocations"},
    {kTemporaryView, symbolize::ProfileView::kTemporary, "temporary allocations"},
    {kPeakView, symbolize::ProfileView::kPeakBytes, "bytes live at the peak"},
    {kLeakedView, symbolize::ProfileView::kLeakedBytes, "bytes leaked"},
};

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// With --alloc=1: how many allocations were written. One counted but not written was in flight
// when its process ended (exit() from another thread, a fatal signal); those the ring had no
// room for are the lost ones, said beside.
std::string EverySampledText(const sampler::AllocTotals& t) {
  const uint64_t accounted = t.sampled + t.lost_samples;
  if (accounted >= t.alloc_calls) {
    return absl::StrCat("every allocation sampled (", output::WithThousands(t.sampled), ")");
  }
  return absl::StrCat("every allocation sampled (", output::WithThousands(t.sampled), "; ",
                      output::WithThousands(t.alloc_calls - accounted),
                      " in flight when its process ended)");
}

// (pid, command)s as "a [1], b [2], c [3] and 4 more": up to three named, the rest counted.
std::string ProcessNames(const std::vector<std::pair<uint32_t, std::string>>& processes) {
  constexpr size_t kNamed = 3;
  std::string names;
  for (size_t i = 0; i < processes.size() && i < kNamed; ++i) {
    absl::StrAppend(&names, i == 0 ? "" : ", ", processes[i].second, " [", processes[i].first,
                    "]");
  }
  if (processes.size() > kNamed) {
    absl::StrAppend(&names, " and ", processes.size() - kNamed, " more");
  }
  return names;
}

// Programs that ran without the preload.
std::string UnhookedLine(const std::vector<std::pair<uint32_t, std::string>>& unhooked) {
  const std::string names = ProcessNames(unhooked);
  return absl::StrCat(
      "allocations: ", output::Plural(unhooked.size(), "program", "programs"),
      " started by the command ran without the allocation library and ",
      unhooked.size() == 1 ? "is" : "are", " not counted: ", names,
      " (statically linked, setuid, switched to a user who cannot open nativeprof's files, or "
      "LD_PRELOAD cleared); to count ", unhooked.size() == 1 ? "it" : "them",
      ", record that program directly, as its user");
}

// Profiled programs whose malloc is not the library's; "" when there are none.
std::string MallocElsewhereLine(const std::vector<NamedProcessHeap>& heaps) {
  std::vector<std::pair<uint32_t, std::string>> elsewhere;
  for (const NamedProcessHeap& p : heaps) {
    if (p.heap.malloc_elsewhere) elsewhere.emplace_back(p.heap.pid, p.command);
  }
  if (elsewhere.empty()) return "";
  const size_t count = elsewhere.size();
  const std::string names = ProcessNames(elsewhere);
  return absl::StrCat(
      "allocations: ", output::Plural(count, "program", "programs"), " called a malloc of ",
      count == 1 ? "its" : "their", " own, which the allocation library cannot interpose, and ",
      count == 1 ? "is" : "are", " not counted: ", names,
      " (a statically linked allocator, as the jemalloc in Rust's compiler, or an LD_PRELOAD "
      "library ahead of nativeprof's)");
}

}  // namespace

std::span<const AllocView> AllocViews() { return kViews; }

const AllocView* FindAllocView(const std::string& name) {
  for (const AllocView& v : kViews) {
    if (name == v.name) return &v;
  }
  return nullptr;
}

std::string FormatBytes(double bytes) {
  if (bytes < 10'000) return absl::StrCat(output::WithThousands(std::llround(bytes)), " B");
  const char* units[] = {"kB", "MB", "GB", "TB"};
  double v = bytes / 1000;
  int u = 0;
  while (v >= 1000 && u < 3) {
    v /= 1000;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, units[u]);
}

std::vector<ViewOutput> AllocOutputs(const RecordOptions& o) {
  std::vector<ViewOutput> out;
  for (const RecordOutput& r : o.outputs) {
    if (r.format == output::OutputFormat::kPprof) {
      out.push_back({RecordOptions::ViewPath(r.path, kHeapView), r.format,
                     symbolize::ProfileView::kHeap});
      continue;
    }
    if (r.format == output::OutputFormat::kSpeedscope) {
      out.push_back({RecordOptions::ViewPath(r.path, kAllocBytesView), r.format,
                     symbolize::ProfileView::kAllocBytes});
      continue;
    }
    for (const AllocView& v : kViews) {
      out.push_back({RecordOptions::ViewPath(r.path, v.name), r.format, v.view});
    }
  }
  return out;
}

nlohmann::json AllocJson(const RecordOptions& o, const AllocRun& run,
                         const unwind::StackCollector& collector) {
  const sampler::AllocTotals& t = run.totals;
  nlohmann::json j;
  j["rate_bytes"] = run.rate_bytes;
  j["exact"] = {
      {"allocation_calls", t.alloc_calls},
      {"allocated_bytes", t.alloc_bytes},
      {"free_calls", t.free_calls},
      {"freed_bytes", t.freed_bytes},
      {"temporary_allocations", t.temporary},
      {"peak_heap_bytes", t.peak_bytes},
      {"leaked_bytes", t.live_bytes()},
      {"leaked_blocks", t.live_blocks()},
      {"leak_known", t.leak_known()},
      {"inherited_free_calls", t.inherited_frees},
      {"inherited_freed_bytes", t.inherited_freed_bytes},
      {"calls_per_second",
       run.duration_seconds > 0 ? static_cast<double>(t.alloc_calls) / run.duration_seconds : 0.0},
  };
  if (run.peak_rss_bytes != 0) j["peak_rss_bytes"] = run.peak_rss_bytes;
  j["processes"] = t.processes;
  // peak_heap_bytes is of every process together; each one's own, as heaptrack reports it per
  // process, the largest first.
  constexpr size_t kMaxListed = 100;
  nlohmann::json per_process = nlohmann::json::array();
  nlohmann::json elsewhere = nlohmann::json::array();
  for (size_t i = 0; i < run.process_heaps.size(); ++i) {
    const NamedProcessHeap& p = run.process_heaps[i];
    if (p.heap.malloc_elsewhere && elsewhere.size() < kMaxListed) {
      elsewhere.push_back({{"pid", p.heap.pid}, {"command", p.command}});
    }
    if (i >= kMaxListed) continue;
    per_process.push_back({{"pid", p.heap.pid},
                           {"command", p.command},
                           {"peak_heap_bytes", p.heap.peak_bytes},
                           {"live_bytes_at_end", p.heap.live_bytes}});
    if (p.heap.malloc_elsewhere) per_process.back()["malloc_elsewhere"] = true;
  }
  j["per_process"] = std::move(per_process);
  // Processes whose own malloc the library could not interpose (uncounted).
  j["malloc_elsewhere_processes"] = std::move(elsewhere);
  if (run.process_heaps.size() > kMaxListed) {
    j["per_process_not_listed"] = run.process_heaps.size() - kMaxListed;
  }
  nlohmann::json unhooked = nlohmann::json::array();
  for (size_t i = 0; i < run.unhooked.size() && i < kMaxListed; ++i) {
    unhooked.push_back({{"pid", run.unhooked[i].first}, {"command", run.unhooked[i].second}});
  }
  j["unhooked_processes"] = std::move(unhooked);
  const unwind::AllocTracker& tracker = collector.allocations();
  j["sampling"] = {
      {"sampled_allocations", t.sampled},
      {"lost_samples", t.lost_samples},
      {"unmatched_frees", tracker.unmatched_frees()},
      {"inherited_frees", tracker.inherited_frees()},
      // How much stack the preload copied per sample (it stops at the stack hint once the
      // thread's unwinds have reached its outermost frame).
      {"mean_stack_copy_bytes",
       collector.stats().alloc_samples != 0
           ? collector.stats().alloc_stack_bytes / collector.stats().alloc_samples
           : 0},
      {"weights", run.rate_bytes <= 1 ? "exact: every allocation is sampled"
                                      : "each sample of size s stands for s / (1 - exp(-s / "
                                        "rate_bytes)) bytes and 1 / (1 - exp(-s / rate_bytes)) "
                                        "allocations (unbiased estimates)"},
  };
  // The series is read as the profiler drains (every 100 ms at most, 10 ms apart at least): a
  // short run's showed only its end, and any run's could miss its peak between two reads. The
  // peak goes in at the time the records date it.
  std::vector<std::pair<uint64_t, uint64_t>> points = run.live_over_time;
  if (const uint64_t at = tracker.exact_peak_time_ns(); at != 0 && t.peak_bytes > 0) {
    const std::pair<uint64_t, uint64_t> peak{at, t.peak_bytes};
    auto after = std::upper_bound(points.begin(), points.end(), peak);
    points.insert(after, peak);
  }
  nlohmann::json series = nlohmann::json::array();
  for (const auto& [time, live] : points) series.push_back({time, live});
  j["live_heap_over_time"] = {{"unit", "[CLOCK_MONOTONIC ns, live bytes]"},
                              {"points", std::move(series)}};
  nlohmann::json files = nlohmann::json::array();
  for (const ViewOutput& v : AllocOutputs(o)) {
    const char* metric = "heap profile: alloc/inuse(at peak)/leaked objects and space";
    for (const AllocView& a : kViews) {
      if (a.view == v.view) metric = a.metric;
    }
    files.push_back({{"path", v.path}, {"metric", metric}});
  }
  j["outputs"] = std::move(files);
  return j;
}

std::vector<std::string> AllocSummaryLines(const AllocRun& run) {
  const sampler::AllocTotals& t = run.totals;
  std::vector<std::string> lines;
  if (t.processes == 0) {
    lines.push_back(
        "allocations: the allocation library was not loaded into the command (a setuid program, "
        "a static binary started by it, or LD_PRELOAD cleared): nothing was counted");
    return lines;
  }
  const double rate =
      run.duration_seconds > 0 ? static_cast<double>(t.alloc_calls) / run.duration_seconds : 0;
  // A forked child's frees of its copies of its parent's blocks are not the run's frees: each
  // block is counted, and leaked or not, where it was allocated.
  const std::string inherited =
      t.inherited_frees == 0
          ? std::string()
          : absl::StrCat(" (and ", output::Plural(t.inherited_frees, "free", "frees"),
                         " of blocks inherited across fork, ",
                         FormatBytes(static_cast<double>(t.inherited_freed_bytes)), ")");
  lines.push_back(absl::StrFormat(
      "allocations: %s calls (%s/s), %s allocated, %s frees%s; %s temporary (%.1f %% of calls)",
      output::WithThousands(t.alloc_calls), output::WithThousands(std::llround(rate)),
      FormatBytes(static_cast<double>(t.alloc_bytes)), output::WithThousands(t.free_calls),
      inherited, output::WithThousands(t.temporary), Share(t.temporary, t.alloc_calls)));
  std::string peak = absl::StrCat("peak heap ", FormatBytes(static_cast<double>(t.peak_bytes)));
  if (run.process_heaps.size() > 1) {
    const NamedProcessHeap& largest = run.process_heaps.front();
    absl::StrAppend(&peak, " (", run.process_heaps.size(), " processes together; the largest, ",
                    largest.command, " [", largest.heap.pid, "], peaked at ",
                    FormatBytes(static_cast<double>(largest.heap.peak_bytes)), ")");
  }
  if (run.peak_rss_bytes != 0) {
    absl::StrAppend(&peak, ", peak RSS ", FormatBytes(static_cast<double>(run.peak_rss_bytes)));
  }
  lines.push_back(absl::StrCat(
      peak, "; leaked ",
      !t.leak_known() ? "unknown (forked processes freed more than the run allocated: their copies of "
                     "their parents' blocks)"
                   : absl::StrCat(FormatBytes(static_cast<double>(t.live_bytes())), " in ",
                                  output::Plural(t.live_blocks(), "block", "blocks")),
      "; ",
      run.rate_bytes <= 1 ? EverySampledText(t)
          : absl::StrCat(output::Plural(t.sampled, "allocation", "allocations"),
                         " sampled (one per ", FormatBytes(static_cast<double>(run.rate_bytes)),
                         " on average)"),
      t.lost_samples != 0 ? absl::StrCat(", ", output::WithThousands(t.lost_samples), " lost")
                          : ""));
  if (!run.unhooked.empty()) lines.push_back(UnhookedLine(run.unhooked));
  const std::string elsewhere = MallocElsewhereLine(run.process_heaps);
  if (!elsewhere.empty()) lines.push_back(elsewhere);
  if (run.rate_bytes > 1 && t.sampled == 0 && t.alloc_calls > 0) {
    lines.push_back(absl::StrCat(
        "allocations: none was sampled (", FormatBytes(static_cast<double>(t.alloc_bytes)),
        " allocated in all, at one sample per ", FormatBytes(static_cast<double>(run.rate_bytes)),
        " on average), so the per-site views are empty; --alloc=1 samples every allocation"));
  }
  // A process whose memory grew far past what malloc handed out allocates some other way. With
  // unhooked programs, or ones named above, the RSS may be theirs.
  constexpr uint64_t kUnexplainedRss = uint64_t{64} << 20;
  if (run.unhooked.empty() && elsewhere.empty() && run.peak_rss_bytes > kUnexplainedRss &&
      t.peak_bytes < run.peak_rss_bytes / 8) {
    // CPython serves small objects from its own arenas (pymalloc), which an environment
    // variable turns off.
    const bool python = absl::c_any_of(run.process_heaps, [](const NamedProcessHeap& p) {
      return absl::StartsWith(p.command, "python");
    });
    lines.push_back(absl::StrCat(
        "allocations: RSS peaked at ", FormatBytes(static_cast<double>(run.peak_rss_bytes)),
        " but malloc and friends had at most ", FormatBytes(static_cast<double>(t.peak_bytes)),
        " live: the rest came another way, from mapped files or mmap, or from an allocator of "
        "the program's own (",
        python ? "CPython's pymalloc: run it with PYTHONMALLOC=malloc to see its allocations"
               : "jemalloc, mimalloc as Rust's #[global_allocator]: build it without that "
                 "allocator to see its allocations",
        ")"));
  }
  return lines;
}

}  // namespace nativeprof::tools
