// Turns the collected (unsymbolized) stacks of a recording into a Profile: each distinct frame is
// symbolized once, inline chains are expanded, frames are interned by name and module, and stacks
// that become identical after naming (two call sites in one function) are merged. Runs once, after
// the target stopped. Main thread.
#ifndef NATIVEPROF_SYMBOLIZE_PROFILE_BUILDER_H_
#define NATIVEPROF_SYMBOLIZE_PROFILE_BUILDER_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "symbolize/profile.h"
#include "symbolize/symbolizer.h"
#include "unwind/stack_collector.h"

namespace nativeprof::symbolize {

// Which time a profile shows. kOffCpu and kWall need a recording with --off-cpu; they are time
// profiles (count_unit "us", weights in nanoseconds).
enum class ProfileView {
  kCpu,     // CPU samples (every recording)
  kOffCpu,  // time switched out: blocked under the stack that blocked, runnable under
            // "[waiting for CPU]"
  kWall,    // both: each thread's on- plus off-CPU time (CPU samples weighted by their period)
  // Allocation sites (--alloc), estimated from the sampled allocations (count_unit "bytes" or
  // "allocations"; exact with --alloc=1).
  kAllocBytes,      // bytes allocated
  kAllocCount,      // allocations
  kTemporary,       // allocations freed before their thread allocated again
  kPeakBytes,       // bytes live at the peak of the live heap
  kLeakedBytes,     // bytes still live when recording ended
  // All of them in one profile with Go's heap sample types (Profile::sample_types):
  // alloc_objects, alloc_space, inuse_objects, inuse_space (in use = at the peak), then
  // leaked_objects, leaked_space; for pprof.
  kHeap,
};

// True for the allocation views.
bool IsAllocView(ProfileView view);
// The unit an allocation view counts in: "bytes" or "allocations" (kHeap: "bytes", its default
// sample type's).
const char* AllocViewUnit(ProfileView view);
// An allocation view alone as a pprof sample type: Go's name where it has one ({"alloc_space",
// "bytes"}, {"inuse_space", "bytes"} for the peak), else one in Go's manner
// ({"temporary_objects", "count"}, {"leaked_space", "bytes"}).
SampleType AllocSampleTypeOf(ProfileView view);

struct ProfileBuildOptions {
  ProfileView view = ProfileView::kCpu;
  std::string event = "cpu-clock";
  std::string weight_unit = "nanoseconds";
  uint64_t sample_frequency_hz = 0;
  uint64_t duration_ns = 0;
  bool timeline = false;  // copy the collector's per-sample timeline (and off-CPU intervals)
  // Allocation views: merge the same stack of every thread and process with the same name into
  // one (pid and tid 0), for outputs that show names only (folded, SVG). A run of many processes
  // otherwise builds one stack per process for each call site.
  bool merge_threads = false;
};

// The leaf frame of off-CPU time spent runnable, and of off-CPU time with no sampled stack.
inline constexpr char kWaitingForCpuFrame[] = "[waiting for CPU]";
inline constexpr char kNoSwitchStackFrame[] = "[off-CPU, stack not sampled]";
// The frame above kWaitingForCpuFrame of a thread or process created while recording, for its
// wait for its first run: it has no stack of its own until it runs.
inline constexpr char kNewThreadFrame[] = "[new thread]";
inline constexpr char kNewProcessFrame[] = "[new process]";
// The wall view's frame of a thread's on-CPU time that no CPU sample fell in (a thread that ran
// for less than a sampling period, or ran between samples).
inline constexpr char kOnCpuNotSampledFrame[] = "[on-CPU, not sampled]";
// One of those: a frame of the time views that is no function's and no module's.
inline bool IsTimePseudoFrame(absl::string_view name) {
  return name == kWaitingForCpuFrame || name == kNoSwitchStackFrame ||
         name == kOnCpuNotSampledFrame || name == kNewThreadFrame || name == kNewProcessFrame;
}

class FrameNames;

// Builds the profiles of one recording's views. Each distinct address is symbolized once for
// all of them.
class ProfileBuilder {
 public:
  ProfileBuilder(const unwind::StackCollector& collector, Symbolizer& symbolizer);
  ~ProfileBuilder();
  ProfileBuilder(const ProfileBuilder&) = delete;
  ProfileBuilder& operator=(const ProfileBuilder&) = delete;

  Profile Build(const ProfileBuildOptions& options);

 private:
  const unwind::StackCollector& collector_;
  std::unique_ptr<FrameNames> names_;
};

// One view of a recording.
Profile BuildProfile(const unwind::StackCollector& collector, Symbolizer& symbolizer,
                     const ProfileBuildOptions& options);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_PROFILE_BUILDER_H_
