#include "unwind/kernel_callchain.h"

#include <linux/perf_event.h>

#include "base/file_util.h"

namespace nativeprof::unwind {
namespace {

bool IsMarker(uint64_t entry) { return entry >= static_cast<uint64_t>(PERF_CONTEXT_MAX); }

}  // namespace

size_t KernelMaxStack() {
  static const size_t max_stack = [] {
    auto v = ReadIntegerFile("/proc/sys/kernel/perf_event_max_stack");
    return v.ok() && *v > 0 ? static_cast<size_t>(*v) : kDefaultKernelMaxStack;
  }();
  return max_stack;
}

KernelCallchain SplitCallchain(std::span<const uint64_t> callchain) {
  KernelCallchain out;
  bool have_kernel = false;
  bool have_user = false;
  size_t i = 0;
  while (i < callchain.size()) {
    const uint64_t marker = callchain[i];
    if (!IsMarker(marker)) {  // entries before any marker: no context to put them in
      ++out.frames;
      ++i;
      continue;
    }
    ++out.markers;
    const size_t first = ++i;
    while (i < callchain.size() && !IsMarker(callchain[i])) ++i;
    out.frames += i - first;
    const std::span<const uint64_t> run = callchain.subspan(first, i - first);
    if (marker == static_cast<uint64_t>(PERF_CONTEXT_KERNEL) && !have_kernel) {
      out.kernel = run;
      have_kernel = true;
    } else if (marker == static_cast<uint64_t>(PERF_CONTEXT_USER) && !have_user) {
      out.user = run;
      have_user = true;
    }
  }
  return out;
}

bool AppendCallchainFrames(std::span<const uint64_t> part, bool kernel, UnwoundStack* out) {
  for (size_t i = 0; i < part.size(); ++i) {
    if (out->frames.size() >= kMaxFrames) return false;
    const FrameAddressKind kind = i == 0 ? FrameAddressKind::kInstructionPointer : FrameAddressKind::kReturnAddress;
    out->frames.push_back(Frame{part[i], kind, kernel});
  }
  return true;
}

}  // namespace nativeprof::unwind
