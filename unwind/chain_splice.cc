#include "unwind/chain_splice.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include "base/file_util.h"

namespace nativeprof::unwind {

std::span<const uint64_t> AppendKernelFrames(std::span<const uint64_t> callchain,
                                             UnwoundStack* out) {
  bool in_kernel = false;
  bool first = true;
  for (size_t i = 0; i < callchain.size(); ++i) {
    const uint64_t a = callchain[i];
    if (a >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) {
      if (a == static_cast<uint64_t>(PERF_CONTEXT_USER)) return callchain.subspan(i + 1);
      in_kernel = a == static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
      continue;
    }
    if (!in_kernel) continue;
    out->frames.push_back(
        {a, first ? FrameAddressKind::kInstructionPointer : FrameAddressKind::kReturnAddress,
         true});
    first = false;
  }
  return {};
}

size_t KernelMaxStack() {
  static const size_t max_stack = [] {
    auto v = ReadIntegerFile("/proc/sys/kernel/perf_event_max_stack");
    return v.ok() && *v > 0 ? static_cast<size_t>(*v) : size_t{127};
  }();
  return max_stack;
}

bool SpliceKernelChain(std::span<const uint64_t> user_chain, size_t first_user_frame,
                       const ProcessView& process, UnwoundStack* out, size_t chain_entries) {
  if (out->end != StackEnd::kTruncatedStack || process.address_space == nullptr ||
      out->frames.size() <= first_user_frame || user_chain.size() < 2) {
    return false;
  }
  const uint64_t last = out->frames.back().avma;
  // user_chain[0] is the sampled ip; the match must be a return address further up.
  size_t k = 1;
  while (k < user_chain.size() && user_chain[k] != last) ++k;
  if (k + 1 >= user_chain.size()) return false;
  for (size_t i = k + 1; i < user_chain.size(); ++i) {
    const uint64_t a = user_chain[i];
    if (a >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) return false;
    const sampler::Mapping* m = process.address_space->Find(a - 1);
    if (m == nullptr || !(m->prot & PROT_EXEC) || m->module == sampler::kNoModule) return false;
  }
  for (size_t i = k + 1; i < user_chain.size() && out->frames.size() < kMaxFrames; ++i) {
    out->frames.push_back({user_chain[i], FrameAddressKind::kReturnAddress, false});
  }
  // A chain the kernel cut at perf_event_max_stack entries does not reach the outermost frame:
  // the frames it adds are right, but the stack stays truncated.
  if (chain_entries >= KernelMaxStack()) return false;
  out->spliced = true;
  out->end = StackEnd::kComplete;
  return true;
}

}  // namespace nativeprof::unwind
