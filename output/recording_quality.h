// The one recording-quality model: every count of what made a profile less complete than it
// looks, from every stage (the rings and the parser, the kernel's losses, unwinding,
// symbolization), in one struct, with one JSON writer (the run's metadata) and one summary
// writer (the lines `record` prints under its counter table, each with its fix). A count that is
// nonzero always reaches the JSON; the summary names the ones a user can act on.
#ifndef NATIVEPROF_OUTPUT_RECORDING_QUALITY_H_
#define NATIVEPROF_OUTPUT_RECORDING_QUALITY_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sampler/session.h"
#include "symbolize/profile.h"
#include "symbolize/symbolizer.h"
#include "unwind/stack_collector.h"
#include "unwind/unwinder.h"

namespace nativeprof::output {

struct RecordingQuality {
  // sampler: what the rings delivered and what could not be read.
  uint64_t ring_records = 0;
  uint64_t ring_bytes = 0;
  uint64_t corrupt_batches = 0;  // ring batches skipped at an impossible record header
  uint64_t parse_errors = 0;     // records shorter than their fields
  uint64_t undecodable_alloc_stacks = 0;  // --alloc delta stacks with nothing to apply them to
  uint64_t peak_held_bytes = 0;  // most record bytes the record sorter held back at once
  // The kernel's own losses.
  uint64_t lost_records = 0;     // PERF_RECORD_LOST: the ring was full
  uint64_t lost_samples = 0;     // PERF_RECORD_LOST_SAMPLES
  uint64_t throttled = 0;        // PERF_RECORD_THROTTLE
  // Unwinding, counted once by the collector, plus what only the unwinder knows.
  uint64_t samples = 0;
  uint64_t frames = 0;
  uint64_t kernel_frames = 0;
  uint64_t unmapped_frames = 0;
  uint64_t spliced = 0;
  std::array<uint64_t, unwind::kStackEndCount> ends{};
  uint64_t truncated_switch = 0;      // of the truncated: switch samples
  uint64_t switch_spliced = 0;        // of the truncated: switch samples the kernel chain finished
  uint64_t truncated_short_copy = 0;  // of the truncated: copies the kernel ended early
  uint64_t fp_fallback_frames = 0;
  uint64_t expr_frames = 0;
  uint64_t replayed_stacks = 0;
  // CPU samples whose outermost frame is user code but no entry point or thread start
  // (OutermostFrameIsRoot): with frame-pointer chains, a chain that broke in code built without
  // frame pointers, which the kernel's walk cannot tell from a finished one.
  uint64_t rootless_samples = 0;
  // CPU samples taken inside execve whose user part is [unknown] (InsideExecveSamples): counted
  // in ends[kNoModule], but nothing is missing from them.
  uint64_t execve_samples = 0;
  // Symbolization.
  symbolize::SymbolizationStats symbols;
  double named_frame_share = 1.0;  // sampled frames (weighted by samples) that got a name
};

// Gathers the stages' counts into the model; `profile` gives the named-frame share.
RecordingQuality CollectRecordingQuality(const sampler::SessionStats& session,
                                         const unwind::StackCollector& collector,
                                         const symbolize::SymbolizationStats& symbols,
                                         const symbolize::Profile& profile);

// Whether a stack's outermost frame is where a process or thread starts (`_start`,
// `__libc_start_call_main`, `start_thread`, `clone3`, ...), so no caller is missing above it.
bool OutermostFrameIsRoot(const std::string& function);

// Samples of `profile` whose outermost frame is a user frame that is not a root; not those
// InsideExecveSamples counts, which have no caller to miss.
uint64_t RootlessSamples(const symbolize::Profile& profile);

// Samples of `profile` taken inside execve (a kernel frame symbolize::IsExecveFunction names)
// whose outermost frame is a user [unknown]: the old image was gone, the new one not started
// (symbolize::UnmappedContext::kInsideExecve).
uint64_t InsideExecveSamples(const symbolize::Profile& profile);

// Share of sampled frames (each stack's frames weighted by its samples) that got a name;
// "[libfoo.so]" and "[unknown]" are the unnamed ones (and "module+0x..." with --addresses). The
// [unknown] user frames of samples taken inside execve are left out: there was nothing to name.
double NamedFrameShare(const symbolize::Profile& profile);

// Sets the metadata's quality sections: "ring", "lost", "throttled", "unwind", "symbolization".
void AddRecordingQualityJson(const RecordingQuality& q, nlohmann::json* metadata);

// What the summary needs to know about the run to name each problem's fix.
struct QualityContext {
  bool dwarf = false;             // --call-graph dwarf (stacks can end early for CFI reasons)
  uint32_t dwarf_stack_bytes = 0; // the stack copy size asked for
  uint32_t switch_stack_bytes = 0; // --off-cpu: the switch samples' copy (--off-cpu-stack)
  std::string depth_limit;        // the limit max-depth stacks hit, e.g. "127 frames (...)"
  std::string lost_line;          // the line for lost records (its fix depends on scheduling)
};

// The summary's lines, one per problem that matters, most important first; empty when the
// profile is as complete as it looks.
std::vector<std::string> RecordingQualityLines(const RecordingQuality& q,
                                               const QualityContext& context);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_RECORDING_QUALITY_H_
