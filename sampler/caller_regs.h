// The session's user-register block (one value per bit of sample_regs_user, low bit first) for
// a sample of which only the caller's ip, sp and bp are known: a blocked thread's snapshot, or
// an allocation preload's delta record. Every other register is 0, which is also what the
// preload writes for them in a whole record.
#ifndef NATIVEPROF_SAMPLER_CALLER_REGS_H_
#define NATIVEPROF_SAMPLER_CALLER_REGS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nativeprof::sampler {

class CallerRegsLayout {
 public:
  explicit CallerRegsLayout(uint64_t sample_regs_user);

  // Where sp sits among a sample's registers; -1 when the mask has no sp.
  int sp_index() const { return sp_index_; }
  // `regs` becomes the block: ip, sp and bp in their places, zeros elsewhere.
  void Fill(uint64_t ip, uint64_t sp, uint64_t bp, std::vector<uint64_t>* regs) const;
  // As Fill, for a block that only Fill and Update have written: its zeros are still zeros, so
  // only the three are stored (the allocation ring's decoder does this for every record).
  void Update(uint64_t ip, uint64_t sp, uint64_t bp, std::vector<uint64_t>* regs) const;

 private:
  int ip_index_, sp_index_, bp_index_;  // -1: not in the mask
  size_t count_;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_CALLER_REGS_H_
