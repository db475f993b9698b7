// The end of a recording: symbolizes the collected stacks, writes every requested output and the
// metadata JSON atomically, and prints the run summary (one line, plus warnings for anything that
// degraded the profile) and the counter table on stderr. Main thread, after sampling stopped.
#ifndef NATIVEPROF_TOOLS_RECORD_REPORT_H_
#define NATIVEPROF_TOOLS_RECORD_REPORT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/scheduling.h"
#include "nlohmann/json.hpp"
#include "output/recording_quality.h"
#include "sampler/counter_value.h"
#include "sampler/session.h"
#include "symbolize/profile.h"
#include "symbolize/symbolizer.h"
#include "tools/alloc_report.h"
#include "tools/record_options.h"
#include "unwind/stack_collector.h"

namespace nativeprof::tools {

// How the drain thread was scheduled, to tell losses from a starved profiler from losses from a
// small ring (issue 15).
struct DrainScheduling {
  PriorityBoost boost;          // what the drain thread ran at
  bool boost_disabled = false;  // --no-boost
  // --off-cpu: SCHED_FIFO was not tried (RaiseThreadPriority's nice_only), so a nice boost is
  // the most it gets, even as root.
  bool realtime_skipped = false;
  // The drain thread's run-queue wait and CPU time (/proc/thread-self/schedstat) while sampling
  // (from enabling the events to the last drain), and its wait from the boost to the start of
  // sampling (opening events, reading maps); unset where the kernel does not report them.
  std::optional<double> wait_seconds;
  std::optional<double> on_cpu_seconds;
  std::optional<double> setup_wait_seconds;
  // From the creation of the process to the boost (tick resolution): on a saturated machine,
  // mostly exec and dynamic loading waiting for a CPU at the priority nativeprof was started with.
  std::optional<double> startup_seconds;
};

struct RunState {
  double duration_seconds = 0;
  int exit_code = 0;           // the target's, as nativeprof will exit with it
  int signals_received = 0;
  bool interrupted = false;    // a signal was forwarded to the target
  bool stopped_waiting = false;  // second SIGINT: stopped before the target exited
  DrainScheduling scheduling;
  std::optional<AllocRun> alloc;  // --alloc
};

// The run-queue wait, as a share of the sampling time, from which records lost to full rings are
// blamed on the profiler waiting for a CPU rather than on the ring size. A drain thread that gets
// a CPU when it wakes waits microseconds per wakeup, far below this.
inline constexpr double kStarvedWaitShare = 0.05;

// The one-line explanation of `lost` records for the summary: the machine was saturated and
// nativeprof waited for a CPU (with what to do about it), or the ring was too small. `off_cpu`:
// the run sampled every context switch (--off-cpu), whose stack copies a smaller one saves.
std::string LostRecordsLine(uint64_t lost, const RunState& state, bool off_cpu = false);

// When the CPU samples (`sampled_ns`: their periods summed) cover under half of the command's
// task-clock, the line that says so and why: a process or thread that runs less than a sampling
// period each is mostly missed (the kernel starts every new task's timer afresh), as in a shell
// loop of short commands. Nothing for runs under 100 ms of CPU, or without a counted task-clock.
std::optional<std::string> SampleCoverageLine(uint64_t sampled_ns,
                                              const std::vector<sampler::CounterValue>& counters,
                                              uint64_t frequency_hz);

// Every file a run writes (each -o, the views beside them, the metadata), with the -o it comes
// from, in the order FinishRecording writes them.
struct RecordFile {
  std::string path;
  std::string output;  // the -o
};
std::vector<RecordFile> RecordFiles(const RecordOptions& options);

// Fails (kInvalidArgument, naming the file and the two -o it comes from) when two of the files
// a run writes (each -o, the views beside them, the metadata) would be the same file: the later
// one would silently replace the earlier.
absl::Status CheckOutputsApart(const RecordOptions& options);

// Fails (kInvalidArgument, naming the file) when a file the run writes would replace one that is
// not a profile: `program`, the file the command runs (sampler::FindProgram; empty when
// attaching), or any other program, library or script (CheckNotOverwritingNonProfile):
// `-o ./bench -- ./bench` replaced the binary, and `-o ./np` nativeprof itself.
absl::Status CheckOutputsSpareFiles(const RecordOptions& options, const std::string& program);

// Writes everything and returns the exit code: the target's (state.exit_code), or kExitOutput
// when an output could not be written (the others are still written).
int FinishRecording(const RecordOptions& options, const sampler::Session& session,
                    const unwind::StackCollector& collector, symbolize::Symbolizer& symbolizer,
                    const std::vector<sampler::CounterValue>& counters, const RunState& state);

// The metadata document written to "<output>.json".
nlohmann::json RecordMetadata(const RecordOptions& options, const sampler::Session& session,
                              const unwind::StackCollector& collector,
                              const output::RecordingQuality& quality,
                              const std::vector<sampler::CounterValue>& counters,
                              const RunState& state);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_RECORD_REPORT_H_
