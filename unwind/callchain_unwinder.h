// Frame-pointer stacks as the kernel walked them (PERF_SAMPLE_CALLCHAIN): splits the chain at the
// PERF_CONTEXT_* markers into kernel and user frames. Needs no stack copy; exact for code built
// with frame pointers, one or two frames for code without. Drain thread only.
#ifndef NATIVEPROF_UNWIND_CALLCHAIN_UNWINDER_H_
#define NATIVEPROF_UNWIND_CALLCHAIN_UNWINDER_H_

#include <cstdint>
#include <span>

#include "unwind/unwinder.h"

namespace nativeprof::unwind {

class CallchainUnwinder final : public Unwinder {
 public:
  void Unwind(const sampler::SampleView& sample, const ProcessView& process,
              UnwoundStack* out) override;
};

// Appends the frames of a raw callchain to `out` (kernel part first, leaf first within each part).
// With `user` false only the kernel part is appended. Returns the number of user entries seen.
size_t AppendCallchain(std::span<const uint64_t> callchain, bool user, UnwoundStack* out);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_CALLCHAIN_UNWINDER_H_
