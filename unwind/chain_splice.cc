#include "unwind/chain_splice.h"

#include <sys/mman.h>

namespace nativeprof::unwind {

bool SpliceKernelChain(std::span<const uint64_t> user_chain, size_t first_user_frame,
                       const ProcessView& process, UnwoundStack* out, bool chain_cut) {
  if (out->end != StackEnd::kTruncatedStack || process.address_space == nullptr ||
      out->frames.size() <= first_user_frame || user_chain.size() < 2) {
    return false;
  }
  const uint64_t last = out->frames.back().avma;
  // The join is the chain's entry for the unwind's last frame. In a recursion the same return
  // address stands for every level, and the chain's first such entry is the innermost level:
  // joining there repeated every level the unwind had already given (109 frames of a recursion
  // 75 deep). The unwind's last frame is its n-th with that address, so the join is the chain's
  // n-th; a chain with fewer (frame pointers that skipped a level) is not joined.
  size_t occurrences = 0;
  for (size_t i = first_user_frame + 1; i < out->frames.size(); ++i) {
    occurrences += out->frames[i].avma == last;
  }
  // Only the leaf: no return address to find in the chain.
  if (occurrences == 0) return false;
  // The kernel's walk starts at the sampled rbp: user_chain[1] is [rbp + 8]. Inside the leaf's
  // frame rbp is the leaf's frame record, 16 bytes below its CFA. Sampled outside it (a
  // recursive function before its push of rbp, after its leave, or on a shrink-wrapped path that
  // sets up no frame), rbp is its caller's record, 16 bytes below the caller's CFA, and the chain
  // lacks the leaf's own return address: it holds one occurrence fewer when that address is the
  // last one (a recursion 101 deep sampled in its innermost level's frameless path showed 100
  // levels). Only that exact record says so: an rbp further up (a frameless caller too, or a
  // register that holds no frame pointer) leaves the join as it was.
  if (out->caller_cfa != 0 && out->sampled_rbp + 16 == out->caller_cfa &&
      out->frames[first_user_frame + 1].avma == last && occurrences > 1) {
    --occurrences;
  }
  // user_chain[0] is the sampled ip; the match must be a return address further up.
  size_t k = 0;
  for (size_t seen = 0; seen < occurrences;) {
    if (++k >= user_chain.size()) return false;
    seen += user_chain[k] == last;
  }
  if (k + 1 >= user_chain.size()) return false;
  for (size_t i = k + 1; i < user_chain.size(); ++i) {
    const uint64_t a = user_chain[i];
    const sampler::Mapping* m = process.address_space->Find(a - 1);
    if (m == nullptr || !(m->prot & PROT_EXEC) || m->module == sampler::kNoModule) return false;
  }
  for (size_t i = k + 1; i < user_chain.size() && out->frames.size() < kMaxFrames; ++i) {
    out->frames.push_back({user_chain[i], FrameAddressKind::kReturnAddress, false});
  }
  // A chain the kernel cut at perf_event_max_stack does not reach the outermost frame: the frames
  // it adds are right, but the stack stays truncated.
  if (chain_cut) return false;
  out->spliced = true;
  out->end = StackEnd::kComplete;
  return true;
}

}  // namespace nativeprof::unwind
