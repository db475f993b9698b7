// The end of a recording: symbolizes the collected stacks, writes every requested output and the
// metadata JSON atomically, and prints the run summary (one line, plus warnings for anything that
// degraded the profile) and the counter table on stderr. Main thread, after sampling stopped.
#ifndef NATIVEPROF_TOOLS_RECORD_REPORT_H_
#define NATIVEPROF_TOOLS_RECORD_REPORT_H_

#include <memory>
#include <vector>

#include "nlohmann/json.hpp"
#include "sampler/counter_value.h"
#include "sampler/session.h"
#include "symbolize/profile.h"
#include "symbolize/symbolizer.h"
#include "tools/record_options.h"
#include "unwind/stack_collector.h"

namespace nativeprof::tools {

struct RunState {
  double duration_seconds = 0;
  int exit_code = 0;           // the target's, as nativeprof will exit with it
  int signals_received = 0;
  bool interrupted = false;    // a signal was forwarded to the target
  bool stopped_waiting = false;  // second SIGINT: stopped before the target exited
};

// Makes the symbolizer for a recording and connects it to the collector's mapping records, so
// files deleted or replaced during the run and the vdso are read while the process is alive.
std::unique_ptr<symbolize::Symbolizer> MakeRecordingSymbolizer(const RecordOptions& options,
                                                               unwind::StackCollector& collector);

// Writes everything and returns the exit code: the target's (state.exit_code), or kExitOutput
// when an output could not be written (the others are still written).
int FinishRecording(const RecordOptions& options, const sampler::Session& session,
                    const unwind::StackCollector& collector, symbolize::Symbolizer& symbolizer,
                    const std::vector<sampler::CounterValue>& counters, const RunState& state);

// The metadata document written to "<output>.json".
nlohmann::json RecordMetadata(const RecordOptions& options, const sampler::Session& session,
                              const unwind::StackCollector& collector,
                              const symbolize::SymbolizationStats& symbols,
                              const std::vector<sampler::CounterValue>& counters,
                              const RunState& state);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_RECORD_REPORT_H_
