#include "unwind/callchain_unwinder.h"

namespace nativeprof::unwind {

void CallchainUnwinder::Unwind(const sampler::SampleView& sample, const ProcessView& process,
                               UnwoundStack* out) {
  out->Clear();
  if (sample.callchain.empty()) {
    out->frames.push_back(Frame{sample.ip, FrameAddressKind::kInstructionPointer, false});
    out->end = StackEnd::kNoUnwindInfo;
    return;
  }
  const KernelCallchain chain = SplitCallchain(sample.callchain);
  const bool fits = AppendCallchainFrames(chain.kernel, /*kernel=*/true, out) &&
                    AppendCallchainFrames(chain.user, /*kernel=*/false, out);
  if (!fits || chain.CutAtMaxStack(kernel_max_stack_)) out->end = StackEnd::kMaxDepth;
}

}  // namespace nativeprof::unwind
