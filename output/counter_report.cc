#include "output/counter_report.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/text_escape.h"

namespace nativeprof::output {
namespace {

using sampler::CounterValue;

bool IsClock(const CounterValue& v) { return std::strcmp(v.event.unit, "msec") == 0; }

// The counted, scaled value of `name`, if present.
std::optional<double> Find(const std::vector<CounterValue>& values, const char* name) {
  for (const CounterValue& v : values) {
    if (v.event.name == name && v.supported && v.counted) return v.scaled;
  }
  return std::nullopt;
}

// perf's rate formatting: "/sec", "K/sec", "M/sec", "G/sec" with three decimals.
std::string RateText(double per_sec) {
  if (per_sec >= 1e9) return absl::StrFormat("%8.3f G/sec", per_sec / 1e9);
  if (per_sec >= 1e6) return absl::StrFormat("%8.3f M/sec", per_sec / 1e6);
  if (per_sec >= 1e3) return absl::StrFormat("%8.3f K/sec", per_sec / 1e3);
  return absl::StrFormat("%8.3f /sec", per_sec);
}

std::string CpusHint(double cpus) {
  if (cpus < 0.5) {
    return absl::StrFormat(
        "on CPU only %.0f%% of the wall time: the command mostly waited (I/O, sleep, locks, "
        "child processes, or for a CPU on a busy machine); a CPU profile misses that time",
        cpus * 100);
  }
  if (cpus < 1.2) return "about one CPU busy: the work is essentially single-threaded";
  return absl::StrFormat("work ran in parallel on about %.1f CPUs on average", cpus);
}

std::string SwitchHint(double per_sec, double count) {
  // A handful of switches in a short run gives a large but meaningless rate.
  if (per_sec > 1000 && count >= 100) {
    return "frequent context switches per CPU-second: threads block often (locks, I/O, sleeps) "
           "or there are more runnable threads than CPUs; scheduling overhead is likely";
  }
  return "few context switches: scheduling overhead is negligible";
}

std::string FaultHint(double per_sec, double count) {
  if (per_sec > 100000 && count >= 1000) {
    return "many page faults per CPU-second: the command keeps touching fresh memory (large or "
           "repeated allocations, first touch of big buffers); reusing memory reduces this";
  }
  return "page-fault rate is low: memory is mostly reused once touched";
}

std::string IpcHint(double ipc) {
  if (ipc < 1.0) {
    return "low instructions per cycle: the CPU is often stalled, typically waiting on memory "
           "(cache misses) or recovering from mispredicted branches";
  }
  if (ipc < 2.0) return "moderate instructions per cycle: some stalls, no dominant bottleneck";
  return "high instructions per cycle: the pipeline is kept busy; a speedup must come from "
         "executing fewer instructions";
}

std::string BranchHint(double pct) {
  if (pct > 5.0) {
    return "high branch-miss rate: data-dependent branches are hard to predict; sorting the "
           "data or branch-free code may help";
  }
  return "branches are well predicted";
}

std::string CacheHint(double pct) {
  if (pct > 10.0) {
    return "high cache-miss rate: suggests poor locality (a working set larger than the cache, "
           "or scattered accesses such as pointer chasing)";
  }
  return "cache-miss rate is low: memory accesses have good locality";
}

std::string MigrationHint(double per_sec, double count) {
  if (per_sec > 100 && count >= 100) {
    return "threads often move between CPUs and start with cold caches; pinning may help";
  }
  return "";
}

void AddMetric(std::vector<DerivedMetric>* out, const char* name, const std::string& event,
               double value, const char* unit, std::string text, std::string hint) {
  DerivedMetric m;
  m.name = name;
  m.event = event;
  m.value = value;
  m.unit = unit;
  m.text = std::move(text);
  m.hint = std::move(hint);
  out->push_back(std::move(m));
}

void AddRatio(std::vector<DerivedMetric>* out, const std::vector<CounterValue>& values,
              const char* name, const char* event, const char* base, const char* unit,
              std::string (*hint)(double)) {
  std::optional<double> num = Find(values, event);
  std::optional<double> den = Find(values, base);
  if (!num || !den || *den <= 0) return;
  double pct = 100.0 * *num / *den;
  AddMetric(out, name, event, pct, unit, absl::StrFormat("%8.2f%% %s", pct, unit),
            hint != nullptr ? hint(pct) : "");
}

std::string ValueText(const CounterValue& v) {
  if (!v.supported) return "<not supported>";
  if (!v.counted) return "<not counted>";
  if (IsClock(v)) return absl::StrFormat("%.2f", v.scaled / 1e6);
  return absl::StrFormat("%.0f", v.scaled);
}

std::string CommandText(const std::vector<std::string>& command) {
  return absl::StrJoin(command, " ");
}

nlohmann::json CounterJson(const CounterValue& v, std::optional<double> rel_stddev_pct) {
  nlohmann::json j;
  j["event"] = v.event.name;
  j["unit"] = IsClock(v) ? "msec" : "";
  j["supported"] = v.supported;
  j["counted"] = v.counted;
  if (v.supported && v.counted) {
    j["raw"] = v.raw;
    j["scaled"] = v.scaled;
    j["value"] = IsClock(v) ? v.scaled / 1e6 : v.scaled;
    j["running_pct"] = v.RunningPercent();
  } else {
    j["raw"] = nullptr;
    j["scaled"] = nullptr;
    j["value"] = nullptr;
    j["running_pct"] = nullptr;
  }
  j["time_enabled_ns"] = v.time_enabled;
  j["time_running_ns"] = v.time_running;
  if (!v.supported && !v.unsupported_reason.empty()) j["unsupported_reason"] = v.unsupported_reason;
  if (rel_stddev_pct.has_value()) j["rel_stddev_pct"] = *rel_stddev_pct;
  return j;
}

nlohmann::json MetricJson(const DerivedMetric& m) {
  return nlohmann::json{{"name", m.name}, {"event", m.event}, {"value", m.value},
                        {"unit", m.unit}, {"hint", m.hint}};
}

// One table row in perf stat's columns: value (18, right), unit (4), event name (33), then the
// metric after '#', then the multiplexing share and the run-to-run variation.
std::string FormatRow(const CounterValue& v, const std::vector<DerivedMetric>& metrics,
                      std::optional<double> rel_stddev_pct, const std::string& prefix) {
  std::string line = absl::StrFormat("%s%18s %-4s %-33s", prefix, ValueText(v),
                                     IsClock(v) && v.supported ? "msec" : "", v.event.name);
  const DerivedMetric* metric = nullptr;
  for (const DerivedMetric& m : metrics) {
    if (m.event == v.event.name) {
      metric = &m;
      break;
    }
  }
  if (metric != nullptr) {
    absl::StrAppend(&line, absl::StrFormat("# %-30s", metric->text));
  } else if (v.supported && v.counted) {
    absl::StrAppend(&line, std::string(32, ' '));
  }
  if (v.supported && v.counted) {
    if (rel_stddev_pct.has_value()) {
      absl::StrAppend(&line, absl::StrFormat("  ( +- %5.2f%% )", *rel_stddev_pct));
    }
    if (v.time_running < v.time_enabled) {
      absl::StrAppend(&line, absl::StrFormat("  (%.2f%%)", v.RunningPercent()));
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace

std::vector<DerivedMetric> ComputeDerivedMetrics(const std::vector<CounterValue>& values,
                                                 double elapsed_seconds) {
  std::vector<DerivedMetric> out;
  std::optional<double> task_clock_ns = Find(values, "task-clock");
  // Rates per second of CPU time, as perf prints them; wall time when no task-clock.
  double rate_seconds = task_clock_ns && *task_clock_ns > 0 ? *task_clock_ns / 1e9
                                                            : elapsed_seconds;
  for (const CounterValue& v : values) {
    if (!v.supported || !v.counted) continue;
    const std::string& name = v.event.name;
    if (name == "task-clock" || name == "cpu-clock") {
      if (elapsed_seconds <= 0 || (name == "cpu-clock" && task_clock_ns)) continue;
      double cpus = v.scaled / 1e9 / elapsed_seconds;
      AddMetric(&out, "cpus_utilized", name, cpus, "CPUs utilized",
                absl::StrFormat("%8.3f CPUs utilized", cpus), CpusHint(cpus));
    } else if (name == "context-switches") {
      if (rate_seconds <= 0) continue;
      double rate = v.scaled / rate_seconds;
      AddMetric(&out, "context_switches_per_sec", name, rate, "/sec", RateText(rate),
                SwitchHint(rate, v.scaled));
    } else if (name == "cpu-migrations") {
      if (rate_seconds <= 0) continue;
      double rate = v.scaled / rate_seconds;
      AddMetric(&out, "cpu_migrations_per_sec", name, rate, "/sec", RateText(rate),
                MigrationHint(rate, v.scaled));
    } else if (name == "page-faults" || name == "minor-faults" || name == "major-faults") {
      if (rate_seconds <= 0) continue;
      double rate = v.scaled / rate_seconds;
      std::string id = name == "page-faults" ? "page_faults_per_sec"
                       : name == "minor-faults" ? "minor_faults_per_sec"
                                                : "major_faults_per_sec";
      AddMetric(&out, id.c_str(), name, rate, "/sec", RateText(rate),
                name == "page-faults" ? FaultHint(rate, v.scaled) : "");
    } else if (name == "cycles") {
      if (!task_clock_ns || *task_clock_ns <= 0) continue;
      double ghz = v.scaled / *task_clock_ns;
      AddMetric(&out, "ghz", name, ghz, "GHz", absl::StrFormat("%8.3f GHz", ghz), "");
    } else if (name == "instructions") {
      std::optional<double> cycles = Find(values, "cycles");
      if (!cycles || *cycles <= 0) continue;
      double ipc = v.scaled / *cycles;
      AddMetric(&out, "ipc", name, ipc, "insn per cycle",
                absl::StrFormat("%8.2f  insn per cycle", ipc), IpcHint(ipc));
    } else if (name == "branches") {
      if (rate_seconds <= 0) continue;
      double rate = v.scaled / rate_seconds;
      AddMetric(&out, "branches_per_sec", name, rate, "/sec", RateText(rate), "");
    }
  }
  AddRatio(&out, values, "branch_miss_rate", "branch-misses", "branches", "of all branches",
           BranchHint);
  AddRatio(&out, values, "cache_miss_rate", "cache-misses", "cache-references",
           "of all cache refs", CacheHint);
  AddRatio(&out, values, "l1d_load_miss_rate", "L1-dcache-load-misses", "L1-dcache-loads",
           "of all L1-dcache accesses", nullptr);
  AddRatio(&out, values, "llc_load_miss_rate", "LLC-load-misses", "LLC-loads",
           "of all LL-cache accesses", nullptr);
  AddRatio(&out, values, "frontend_stall_rate", "stalled-cycles-frontend", "cycles",
           "frontend cycles idle", nullptr);
  AddRatio(&out, values, "backend_stall_rate", "stalled-cycles-backend", "cycles",
           "backend cycles idle", nullptr);
  return out;
}

MeanStddev ComputeMeanStddev(const std::vector<double>& samples) {
  MeanStddev out;
  if (samples.empty()) return out;
  double sum = 0;
  for (double s : samples) sum += s;
  const double n = static_cast<double>(samples.size());
  out.mean = sum / n;
  if (samples.size() < 2) return out;
  double m2 = 0;
  for (double s : samples) m2 += (s - out.mean) * (s - out.mean);
  // perf's stddev_stats: sample variance / n, i.e. the standard deviation of the mean.
  out.stddev_of_mean = std::sqrt(m2 / (n - 1) / n);
  out.rel_pct = out.mean != 0 ? 100.0 * out.stddev_of_mean / std::fabs(out.mean) : 0;
  return out;
}

CounterSummary SummarizeRuns(const std::vector<std::string>& command,
                             const std::vector<CounterRun>& runs) {
  CounterSummary summary;
  summary.command = command;
  summary.runs = static_cast<int>(runs.size());
  if (runs.empty()) return summary;
  const size_t n_events = runs.front().values.size();
  for (size_t i = 0; i < n_events; ++i) {
    const CounterValue& first = runs.front().values[i];
    CounterSummaryRow row;
    if (!first.supported) {
      row.value = first;
      summary.rows.push_back(std::move(row));
      continue;
    }
    std::vector<double> scaled;
    double raw = 0, enabled = 0, running = 0;
    for (const CounterRun& run : runs) {
      if (i >= run.values.size()) continue;
      const CounterValue& v = run.values[i];
      if (!v.supported || !v.counted) continue;
      scaled.push_back(v.scaled);
      raw += static_cast<double>(v.raw);
      enabled += static_cast<double>(v.time_enabled);
      running += static_cast<double>(v.time_running);
    }
    if (scaled.empty()) {
      row.value = sampler::MakeCounterValue(first.event, 0, 0, 0);
    } else {
      const double k = static_cast<double>(scaled.size());
      MeanStddev stats = ComputeMeanStddev(scaled);
      row.value = sampler::MakeCounterValue(first.event, std::llround(raw / k),
                                            std::llround(enabled / k), std::llround(running / k));
      row.value.scaled = stats.mean;
      row.rel_stddev_pct = stats.rel_pct;
    }
    summary.rows.push_back(std::move(row));
  }
  std::vector<double> elapsed;
  double user = 0, sys = 0;
  for (const CounterRun& run : runs) {
    elapsed.push_back(run.elapsed_seconds);
    user += run.user_seconds;
    sys += run.sys_seconds;
  }
  MeanStddev e = ComputeMeanStddev(elapsed);
  summary.elapsed_seconds = e.mean;
  summary.elapsed_stddev_seconds = e.stddev_of_mean;
  summary.user_seconds = user / static_cast<double>(runs.size());
  summary.sys_seconds = sys / static_cast<double>(runs.size());
  std::vector<CounterValue> means;
  for (const CounterSummaryRow& row : summary.rows) means.push_back(row.value);
  summary.metrics = ComputeDerivedMetrics(means, summary.elapsed_seconds);
  summary.threads = runs.back().threads;
  return summary;
}

std::string FormatCounterSummary(const CounterSummary& summary) {
  std::string out =
      summary.attached_pid > 0
          ? absl::StrCat("\n Performance counter stats for process id '", summary.attached_pid,
                         "'")
          : absl::StrCat("\n Performance counter stats for '", CommandText(summary.command),
                         "'");
  if (summary.runs > 1) absl::StrAppend(&out, " (", summary.runs, " runs)");
  absl::StrAppend(&out, ":\n\n");
  for (const CounterSummaryRow& row : summary.rows) {
    std::optional<double> stddev;
    if (summary.runs > 1) stddev = row.rel_stddev_pct;
    absl::StrAppend(&out, FormatRow(row.value, summary.metrics, stddev, ""), "\n");
  }
  if (summary.runs > 1) {
    const double rel = summary.elapsed_seconds > 0
                           ? 100.0 * summary.elapsed_stddev_seconds / summary.elapsed_seconds
                           : 0;
    absl::StrAppend(&out, absl::StrFormat("\n %17.6f +- %.6f seconds time elapsed  ( +- %5.2f%% )\n",
                                          summary.elapsed_seconds, summary.elapsed_stddev_seconds,
                                          rel));
  } else if (summary.attached_pid > 0) {
    // The user/sys split of a process we did not start is not known.
    absl::StrAppend(&out, absl::StrFormat("\n %18.9f seconds time elapsed\n",
                                          summary.elapsed_seconds));
  } else {
    absl::StrAppend(&out, absl::StrFormat("\n %18.9f seconds time elapsed\n\n",
                                          summary.elapsed_seconds));
    absl::StrAppend(&out, absl::StrFormat(" %18.9f seconds user\n", summary.user_seconds));
    absl::StrAppend(&out, absl::StrFormat(" %18.9f seconds sys\n", summary.sys_seconds));
  }
  if (!summary.threads.empty()) {
    absl::StrAppend(&out, "\n Per thread (pid/tid comm):\n\n");
    for (const sampler::ThreadCounters& t : summary.threads) {
      // The profiled program names its threads (prctl PR_SET_NAME): any 15 bytes.
      std::string prefix =
          absl::StrFormat(" %7d/%-7d %-16s", t.pid, t.tid, EscapeForMessage(t.comm));
      for (const CounterValue& v : t.values) {
        // Per-thread rows carry no metrics: rates per thread would need per-thread wall time.
        absl::StrAppend(&out, FormatRow(v, {}, std::nullopt, prefix), "\n");
      }
    }
  }
  bool any_hint = false;
  for (const DerivedMetric& m : summary.metrics) {
    if (m.hint.empty()) continue;
    if (!any_hint) absl::StrAppend(&out, "\n Hints:\n");
    any_hint = true;
    absl::StrAppend(&out, absl::StrFormat("   %-24s %s\n", m.event + ":", m.hint));
  }
  absl::StrAppend(&out, "\n");
  return out;
}

nlohmann::json CounterSummaryToJson(const CounterSummary& summary) {
  nlohmann::json j;
  j["command"] = summary.command;
  if (summary.attached_pid > 0) j["pid"] = summary.attached_pid;
  j["runs"] = summary.runs;
  j["elapsed_seconds"] = summary.elapsed_seconds;
  if (summary.runs > 1) {
    j["elapsed_rel_stddev_pct"] = summary.elapsed_seconds > 0
                                      ? 100.0 * summary.elapsed_stddev_seconds /
                                            summary.elapsed_seconds
                                      : 0.0;
  }
  j["user_seconds"] = summary.user_seconds;
  j["sys_seconds"] = summary.sys_seconds;
  j["counters"] = nlohmann::json::array();
  for (const CounterSummaryRow& row : summary.rows) {
    std::optional<double> stddev;
    if (summary.runs > 1) stddev = row.rel_stddev_pct;
    j["counters"].push_back(CounterJson(row.value, stddev));
  }
  j["metrics"] = nlohmann::json::array();
  for (const DerivedMetric& m : summary.metrics) j["metrics"].push_back(MetricJson(m));
  if (!summary.threads.empty()) {
    j["threads"] = nlohmann::json::array();
    for (const sampler::ThreadCounters& t : summary.threads) {
      nlohmann::json tj{{"pid", t.pid}, {"tid", t.tid}, {"comm", t.comm}};
      tj["counters"] = nlohmann::json::array();
      for (const CounterValue& v : t.values) tj["counters"].push_back(CounterJson(v, std::nullopt));
      j["threads"].push_back(std::move(tj));
    }
  }
  return j;
}

std::string FormatCounterTable(const std::vector<CounterValue>& values, double elapsed_seconds) {
  std::vector<DerivedMetric> metrics = ComputeDerivedMetrics(values, elapsed_seconds);
  std::string out;
  for (const CounterValue& v : values) {
    absl::StrAppend(&out, FormatRow(v, metrics, std::nullopt, ""), "\n");
  }
  return out;
}

nlohmann::json CountersToJson(const std::vector<CounterValue>& values, double elapsed_seconds) {
  nlohmann::json j;
  j["elapsed_seconds"] = elapsed_seconds;
  j["counters"] = nlohmann::json::array();
  for (const CounterValue& v : values) j["counters"].push_back(CounterJson(v, std::nullopt));
  j["metrics"] = nlohmann::json::array();
  for (const DerivedMetric& m : ComputeDerivedMetrics(values, elapsed_seconds)) {
    j["metrics"].push_back(MetricJson(m));
  }
  return j;
}

}  // namespace nativeprof::output
