#include "unwind/callchain_unwinder.h"

#include <linux/perf_event.h>

namespace nativeprof::unwind {
namespace {

// perf_event_max_stack's default; a user chain this long was probably cut by the kernel.
constexpr size_t kKernelMaxStack = 127;

}  // namespace

size_t AppendCallchain(std::span<const uint64_t> callchain, bool user, UnwoundStack* out) {
  enum class Context { kNone, kKernel, kUser, kOther } context = Context::kNone;
  bool first_in_context = true;
  size_t user_entries = 0;
  for (uint64_t entry : callchain) {
    if (entry >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) {
      context = entry == static_cast<uint64_t>(PERF_CONTEXT_KERNEL) ? Context::kKernel
                : entry == static_cast<uint64_t>(PERF_CONTEXT_USER) ? Context::kUser
                                                                    : Context::kOther;
      first_in_context = true;
      continue;
    }
    if (context == Context::kOther || context == Context::kNone) continue;
    const bool kernel = context == Context::kKernel;
    if (!kernel) {
      ++user_entries;
      if (!user) continue;
    }
    // The first entry of each context is where that context was interrupted; the rest are
    // return addresses.
    if (out->frames.size() < kMaxFrames) {
      out->frames.push_back(Frame{entry,
                                  first_in_context ? FrameAddressKind::kInstructionPointer
                                                   : FrameAddressKind::kReturnAddress,
                                  kernel});
    }
    first_in_context = false;
  }
  return user_entries;
}

void CallchainUnwinder::Unwind(const sampler::SampleView& sample, const ProcessView& process,
                               UnwoundStack* out) {
  out->Clear();
  if (sample.callchain.empty()) {
    out->frames.push_back(Frame{sample.ip, FrameAddressKind::kInstructionPointer, false});
    out->end = StackEnd::kNoUnwindInfo;
    return;
  }
  const size_t user_entries = AppendCallchain(sample.callchain, /*user=*/true, out);
  if (user_entries >= kKernelMaxStack || out->frames.size() >= kMaxFrames) {
    out->end = StackEnd::kMaxDepth;
  }
}

}  // namespace nativeprof::unwind
