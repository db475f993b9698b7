// The symbolized profile: what symbolize/ produces from unwound stacks and what every writer in
// output/ consumes (folded, SVG, pprof, speedscope, report, diff). A folded file read back from
// disk yields the same model with only names filled in. Plain values; no locking.
#ifndef NATIVEPROF_SYMBOLIZE_PROFILE_H_
#define NATIVEPROF_SYMBOLIZE_PROFILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nativeprof::symbolize {

// Where a profile frame's name comes from (user code, the kernel, an inlined call, JIT code);
// writers annotate names with the FlameGraph suffixes "" / "_[k]" / "_[i]" / "_[j]". Not
// unwind::FrameAddressKind, which says whether an address is an instruction or a return address.
enum class ProfileFrameKind : uint8_t { kUser, kKernel, kInlined, kJit };

const char* ProfileFrameKindSuffix(ProfileFrameKind kind);

struct ProfileFrame {
  std::string function;     // display name (demangled, arguments dropped unless --full-names);
                            // "[libfoo.so]" in a module but no symbol, "[unknown]" in no module
  ProfileFrameKind kind = ProfileFrameKind::kUser;
  std::string module;       // path of the mapped file; empty when unknown
  std::string build_id;     // lower-case hex; empty when unknown
  uint64_t module_offset = 0;  // file offset of the address within `module` (0 when unknown)
  std::string file;         // source file (only with --lines / DWARF)
  uint32_t line = 0;

  friend bool operator==(const ProfileFrame&, const ProfileFrame&) = default;
};

struct ProfileStack {
  std::string thread_name;  // comm of the sampled thread
  int32_t pid = 0;          // 0 when unknown (e.g. read from a folded file)
  int32_t tid = 0;
  std::vector<uint32_t> frames;  // indexes into Profile::frames, ROOT FIRST, leaf last
  uint64_t samples = 0;     // number of samples with exactly this stack; in a time profile
                            // (Profile::count_unit "us"), its weight in microseconds
  uint64_t weight = 0;      // sum of sample periods (nanoseconds for cpu-clock/task-clock);
                            // off-CPU stacks: time off-CPU in nanoseconds
  bool off_cpu = false;     // time spent switched out (--off-cpu), not sampled on a CPU
  std::vector<uint64_t> values = {};  // one per Profile::sample_types, when that is not empty
  // More (key, value) labels for pprof, after thread, pid and tid: the heap profile's "via".
  std::vector<std::pair<std::string, std::string>> labels = {};
};

// A named value of every stack, for profiles with several (a heap profile: allocations and bytes,
// allocated and in use), in pprof's terms.
struct SampleType {
  std::string type;  // "alloc_space"
  std::string unit;  // "bytes"
};

// One sample in time order, for flame charts and speedscope's time-ordered view.
struct TimedSample {
  uint64_t time_ns = 0;     // perf clock (CLOCK_MONOTONIC-like), as in the sample record
  uint32_t stack = 0;       // index into Profile::stacks
  uint64_t weight = 0;      // this sample's own weight (an off-CPU interval's length); 0: the
                            // stack's average
};

struct Profile {
  std::vector<ProfileFrame> frames;  // unique frames
  std::vector<ProfileStack> stacks;  // unique (thread, frames) pairs
  std::vector<TimedSample> timeline; // may be empty (profiles read from folded files)
  std::string event = "cpu-clock";   // sampling event name
  std::string weight_unit = "nanoseconds";  // unit of ProfileStack::weight; "samples" if unknown
  // Unit of ProfileStack::samples, the count folded files and flame graphs show: "samples", or
  // "us" for the time profiles of --off-cpu and --wall (weight / 1000, rounded).
  std::string count_unit = "samples";
  uint64_t sample_frequency_hz = 0;  // 0 when unknown
  uint64_t duration_ns = 0;          // 0 when unknown
  // Non-empty: every stack has `values` of these types, which pprof writes instead of samples /
  // weight (other writers show `samples`); `default_sample_type` is the one pprof shows first,
  // and a non-zero `period` of `period_type` is the sampling distance.
  std::vector<SampleType> sample_types;
  std::string default_sample_type;
  SampleType period_type;
  uint64_t period = 0;

  // The off-CPU view alone (ProfileView::kOffCpu, or an OUT.offcpu.* file read back): its event
  // is "off-cpu" and every stack is off-CPU time.
  bool is_off_cpu_view() const { return event == "off-cpu"; }
};

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_PROFILE_H_
