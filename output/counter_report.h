// Turns counter values into what `nativeprof stat` (and `record`'s counter summary) shows: the
// perf-stat-like table with derived metrics (CPUs utilized, IPC, miss rates, rates per second),
// one plain-language hint per metric, mean +- relative standard deviation over repeated runs,
// the per-thread breakdown, and the same numbers as JSON. Pure functions; any thread.
#ifndef NATIVEPROF_OUTPUT_COUNTER_REPORT_H_
#define NATIVEPROF_OUTPUT_COUNTER_REPORT_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sampler/counter_threads.h"
#include "sampler/counter_value.h"

namespace nativeprof::output {

// A number computed from one or more counters, printed after the `#` of its event's row.
struct DerivedMetric {
  std::string name;   // stable id: cpus_utilized, ipc, branch_miss_rate, cache_miss_rate,
                      // page_faults_per_sec, context_switches_per_sec, ghz, ...
  std::string event;  // the row it belongs to
  double value = 0;   // in `unit` (percentages are 0..100; rates are per second of task-clock)
  std::string unit;   // "CPUs utilized", "insn per cycle", "% of all branches", "/sec", ...
  std::string text;   // as printed, e.g. "   0.584 CPUs utilized", "   1.812 K/sec"
  std::string hint;   // one plain-language line on what the value suggests; may be empty
};

// The metrics whose inputs are present and counted in `values`. Rates are per second of
// task-clock when task-clock was counted (as perf), else per second of `elapsed_seconds`.
std::vector<DerivedMetric> ComputeDerivedMetrics(const std::vector<sampler::CounterValue>& values,
                                                 double elapsed_seconds);

// One run of the measured command.
struct CounterRun {
  std::vector<sampler::CounterValue> values;  // totals, one per event
  double elapsed_seconds = 0;
  double user_seconds = 0;
  double sys_seconds = 0;
  std::vector<sampler::ThreadCounters> threads;  // per-thread breakdown, when asked for
};

struct CounterSummaryRow {
  // Means over the runs: raw, time_enabled and time_running are averaged (as perf does) and
  // `scaled` is the mean of each run's scaled value. Not counted if no run counted it.
  sampler::CounterValue value;
  double rel_stddev_pct = 0;  // standard deviation of the mean / mean, in % (runs > 1)
};

struct CounterSummary {
  std::vector<std::string> command;
  pid_t attached_pid = -1;  // > 0: counted an existing process (stat -p) instead of `command`
  int runs = 0;
  std::vector<CounterSummaryRow> rows;
  double elapsed_seconds = 0;          // mean
  double elapsed_stddev_seconds = 0;   // standard deviation of the mean (runs > 1)
  double user_seconds = 0;             // mean
  double sys_seconds = 0;              // mean
  std::vector<DerivedMetric> metrics;  // from the mean values
  std::vector<sampler::ThreadCounters> threads;  // the last run's breakdown, if any
};

// Averages `runs` (all with the same events in the same order). An empty `runs` gives a
// summary with no rows.
CounterSummary SummarizeRuns(const std::vector<std::string>& command,
                             const std::vector<CounterRun>& runs);

// perf stat's layout: header, one aligned row per event ("<not supported>" / "<not counted>"
// instead of numbers that do not exist, "(NN.NN%)" when multiplexed, "( +- N.NN% )" for -r),
// elapsed/user/sys times, then the per-thread rows and the hints.
std::string FormatCounterSummary(const CounterSummary& summary);

// The same numbers for machines: raw, scaled, value in the display unit, enabled/running ns,
// unit, per-counter relative stddev, derived metrics with hints, threads.
nlohmann::json CounterSummaryToJson(const CounterSummary& summary);

// One-run conveniences for `record`: just the rows and metrics for these values.
std::string FormatCounterTable(const std::vector<sampler::CounterValue>& values,
                               double elapsed_seconds);
nlohmann::json CountersToJson(const std::vector<sampler::CounterValue>& values,
                              double elapsed_seconds);

// Mean and the relative standard deviation of the mean in % (perf stat -r's "+-"): 0 for
// fewer than two samples or a zero mean.
struct MeanStddev {
  double mean = 0;
  double stddev_of_mean = 0;
  double rel_pct = 0;
};
MeanStddev ComputeMeanStddev(const std::vector<double>& samples);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_COUNTER_REPORT_H_
