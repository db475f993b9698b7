// Turns one sample into a list of frame addresses, leaf first. Unwinders only produce addresses;
// naming them is symbolize/'s job. Used on the drain thread; an Unwinder keeps caches and is not
// thread-safe. Unwind() must not allocate in steady state (the output is reused).
#ifndef NATIVEPROF_UNWIND_UNWINDER_H_
#define NATIVEPROF_UNWIND_UNWINDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "module/debug_file_finder.h"
#include "sampler/address_space.h"
#include "sampler/module_registry.h"
#include "sampler/perf_event.h"
#include "sampler/records.h"

namespace nativeprof::unwind {

// What a frame's avma is: the sampled instruction (the leaf, or the interrupted frame of a signal
// handler), or a return address, which points after the call: symbol and CFI lookups use avma - 1
// for those (see LookupAvma). Not symbolize::ProfileFrameKind, which says how a name was found.
enum class FrameAddressKind : uint8_t { kInstructionPointer, kReturnAddress };

struct Frame {
  uint64_t avma = 0;
  FrameAddressKind kind = FrameAddressKind::kReturnAddress;
  bool kernel = false;
};

inline uint64_t LookupAvma(const Frame& f) {
  return f.kind == FrameAddressKind::kReturnAddress ? f.avma - 1 : f.avma;
}

// Why an unwind stopped. Anything but kComplete is counted and shown in the run summary.
enum class StackEnd : uint8_t {
  kComplete,           // reached the outermost frame (or the chain's natural end)
  kTruncatedStack,     // the frame's CFA lies beyond the copied user stack
  kNoUnwindInfo,       // no CFI and frame pointers gave nothing usable
  kNoModule,           // a return address in no known mapping (JIT / anonymous memory)
  kBadFrame,           // unwinding did not advance or produced an impossible frame
  kMaxDepth,           // hit the frame limit
};
inline constexpr int kStackEndCount = 6;
const char* StackEndName(StackEnd end);

struct UnwoundStack {
  std::vector<Frame> frames;  // leaf first; kernel frames (if any) before user frames
  StackEnd end = StackEnd::kComplete;
  bool spliced = false;       // DWARF unwind completed with the kernel's frame-pointer chain
  // For a complete DWARF unwind: an avma above every byte of the stack copy it read (the
  // outermost frame's CFA); 0 when not known.
  uint64_t stack_high = 0;
  // Non-zero when every frame came from one memoized unwind (UnwindMemo): an id that names that
  // entry alone for the whole run, so two stacks with the same id hold the same frames in the
  // same address-space generation, and whoever resolved the first may reuse what it found.
  uint64_t replayed_from = 0;
  // For the hybrid splice (SpliceKernelChain), which must know whether the kernel's frame-pointer
  // walk, which starts at the sampled rbp, holds the leaf's own return address: the CFA of the
  // leaf's caller (the sp of the frame above it) once the unwind got that far, and the sampled
  // rbp. 0 when not known.
  uint64_t caller_cfa = 0;
  uint64_t sampled_rbp = 0;

  void Clear() {
    frames.clear();
    end = StackEnd::kComplete;
    spliced = false;
    stack_high = 0;
    replayed_from = 0;
    caller_cfa = 0;
    sampled_rbp = 0;
  }
};

// What an unwinder may consult about the sampled process.
struct ProcessView {
  int32_t pid = 0;
  const sampler::AddressSpace* address_space = nullptr;
  const sampler::ModuleRegistry* modules = nullptr;
};

// What only an unwinder knows about how it found frames. How each stack ended, and how many
// frames it has, is counted once, by the StackCollector that runs the unwinder.
struct UnwinderStats {
  uint64_t fp_fallback_frames = 0;  // DWARF mode: frames found with frame pointers for lack of CFI
  uint64_t expr_frames = 0;         // frames whose CFI rule needed the expression interpreter
  uint64_t replayed_stacks = 0;     // DWARF mode: stacks replayed from the memo, not walked
};

class Unwinder {
 public:
  virtual ~Unwinder() = default;
  // Unwinds `sample` into `out` (cleared first).
  virtual void Unwind(const sampler::SampleView& sample, const ProcessView& process,
                      UnwoundStack* out) = 0;
  virtual UnwinderStats stats() const { return {}; }
};

inline constexpr size_t kMaxFrames = 1024;

// Call-graph modes of `record --call-graph`.
enum class CallGraphMode : uint8_t { kFramePointer, kDwarf };
enum class DwarfBackend : uint8_t { kNative, kLibunwind };

// Makes the unwinder for a mode. kFramePointer reads PERF_SAMPLE_CALLCHAIN (the kernel's walk).
// Errors: kUnimplemented if the mode is not available in this build.
// `debug_dirs`: where DWARF unwinding looks for separate debug files (.debug_frame), the same
// list the symbolizer is given.
absl::StatusOr<std::unique_ptr<Unwinder>> MakeUnwinder(
    CallGraphMode mode, DwarfBackend backend,
    const std::vector<std::string>& debug_dirs = module::DefaultDebugDirs());

// Asks the kernel for what a mode's unwinder reads in every sample: the callchain always (it
// carries the kernel part), plus for kDwarf the user registers and `dwarf_stack_bytes` of user
// stack. The one place `record` and the library set this up.
void RequestSampleFields(CallGraphMode mode, uint32_t dwarf_stack_bytes,
                         sampler::SamplingAttrOptions* sampling);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_UNWINDER_H_
