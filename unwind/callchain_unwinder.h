// Frame-pointer stacks as the kernel walked them (PERF_SAMPLE_CALLCHAIN): the kernel part, then
// the user part of the chain (split by kernel_callchain.h). Needs no stack copy; exact for code
// built with frame pointers, one or two frames for code without. Drain thread only.
#ifndef NATIVEPROF_UNWIND_CALLCHAIN_UNWINDER_H_
#define NATIVEPROF_UNWIND_CALLCHAIN_UNWINDER_H_

#include <cstddef>

#include "unwind/kernel_callchain.h"
#include "unwind/unwinder.h"

namespace nativeprof::unwind {

class CallchainUnwinder final : public Unwinder {
 public:
  // `kernel_max_stack`: the limit the kernel cut chains at when they were recorded; a chain that
  // long ends in kMaxDepth, since its outermost frames are missing.
  explicit CallchainUnwinder(size_t kernel_max_stack = KernelMaxStack())
      : kernel_max_stack_(kernel_max_stack) {}

  void Unwind(const sampler::SampleView& sample, const ProcessView& process,
              UnwoundStack* out) override;

 private:
  size_t kernel_max_stack_;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_CALLCHAIN_UNWINDER_H_
