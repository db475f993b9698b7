// Rebuilds the stack copies of the allocation preload's delta records
// (alloc_channel::kAllocDeltaSampleId): each is sent as the words that differ from the same
// thread's previous allocation record, so the profiler keeps every thread's last copy and
// applies the runs to it. Records must come in ring order per thread, as the sorter delivers
// them. Whole records (kAllocSampleId) replace a thread's copy; a thread's exit drops it.
#ifndef NATIVEPROF_SAMPLER_ALLOC_STACK_DECODER_H_
#define NATIVEPROF_SAMPLER_ALLOC_STACK_DECODER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sampler/caller_regs.h"
#include "sampler/records.h"

namespace nativeprof::sampler {

class AllocStackDecoder {
 public:
  // `sample_regs_user` is the session's mask (sp's place among the record's registers);
  // `sample_stack_user` its stack-copy size, the most a copy can hold.
  AllocStackDecoder(uint64_t sample_regs_user, uint32_t sample_stack_user);

  // For an allocation record: keeps its copy (whole) or rebuilds it (delta) and points
  // `sample.stack_user` at the copy, which stays valid until this thread's next record, with
  // `stack_user_requested` and `regs_user` what the whole record would have said. A delta
  // that cannot be rebuilt (no earlier copy of the thread, or runs outside the copy) leaves the
  // sample with no stack, counted in undecodable(), and drops the thread's copy until its next
  // whole record. So does a gap in the deltas' sequence numbers.
  void OnAlloc(SampleView& sample);
  void OnThreadExit(uint32_t pid, uint32_t tid) { copies_.erase(Key(pid, tid)); }

  uint64_t undecodable() const { return undecodable_; }

 private:
  // A thread's last copy: the words [sp, sp + 8 * size) of its stack, kept in `window` at places
  // fixed by their addresses. The window holds [end - 8 * window.size(), end), where `end` is
  // the end of the copy that last placed it: a thread's copies nearly all end at the same place
  // (its stack hint), so a delta whose sp moved changes only its runs' words instead of moving
  // the whole copy.
  struct Copy {
    uint64_t sp = 0;
    size_t size = 0;
    uint64_t end = 0;
    std::vector<uint64_t> window;
    std::vector<uint64_t> regs;  // the last delta's registers, in the session's layout
    uint32_t deltas = 0;         // deltas applied since the last whole record

    uint64_t* At(uint64_t address) {
      return window.data() + (address - (end - 8 * window.size())) / 8;
    }
  };
  static uint64_t Key(uint32_t pid, uint32_t tid) { return uint64_t{pid} << 32 | tid; }
  bool Rebuild(const SampleView& sample, Copy& copy);

  CallerRegsLayout regs_;  // without sp in the mask the preload sends no deltas
  uint64_t max_bytes_;
  absl::flat_hash_map<uint64_t, Copy> copies_;
  uint64_t undecodable_ = 0;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_ALLOC_STACK_DECODER_H_
