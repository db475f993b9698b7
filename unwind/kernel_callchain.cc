#include "unwind/kernel_callchain.h"

#include <linux/perf_event.h>

#include <algorithm>

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
  // One resize and plain stores: this runs for every frame of every sample.
  const size_t base = out->frames.size();
  const size_t room = base < kMaxFrames ? kMaxFrames - base : 0;
  const size_t n = std::min(part.size(), room);
  if (n == 0) return part.empty();
  out->frames.resize(base + n);
  Frame* frames = out->frames.data() + base;
  frames[0] = Frame{part[0], FrameAddressKind::kInstructionPointer, kernel};
  for (size_t i = 1; i < n; ++i) {
    frames[i] = Frame{part[i], FrameAddressKind::kReturnAddress, kernel};
  }
  return n == part.size();
}

}  // namespace nativeprof::unwind
