#include "sampler/alloc_stack_decoder.h"

#include <asm/perf_regs.h>

#include <algorithm>
#include <cstring>

#include "sampler/alloc_channel_layout.h"

namespace nativeprof::sampler {

AllocStackDecoder::AllocStackDecoder(uint64_t sample_regs_user, uint32_t sample_stack_user)
    : max_bytes_(sample_stack_user) {
  if (sample_regs_user >> PERF_REG_X86_SP & 1) {
    sp_index_ = __builtin_popcountll(sample_regs_user & ((uint64_t{1} << PERF_REG_X86_SP) - 1));
  }
}

void AllocStackDecoder::OnAlloc(SampleView& sample) {
  const bool delta = sample.id == alloc_channel::kAllocDeltaSampleId;
  const bool has_sp = sp_index_ >= 0 && static_cast<size_t>(sp_index_) < sample.regs_user.size();
  const uint64_t key = Key(sample.pid, sample.tid);
  if (!delta) {
    // The preload keeps a whole copy as its next base only when it is whole words.
    const size_t bytes = sample.stack_user.size();
    if (!has_sp || bytes == 0 || bytes % 8 != 0) {
      copies_.erase(key);
      return;
    }
    Copy& copy = copies_[key];
    copy.sp = sample.regs_user[sp_index_];
    copy.words.resize(bytes / 8);
    std::memcpy(copy.words.data(), sample.stack_user.data(), bytes);
    return;
  }
  auto it = copies_.find(key);
  if (!has_sp || it == copies_.end() || !Rebuild(sample, sample.regs_user[sp_index_], it->second)) {
    ++undecodable_;
    if (it != copies_.end()) copies_.erase(it);
    sample.stack_user = {};
    return;
  }
  const Copy& copy = it->second;
  sample.stack_user = {reinterpret_cast<const uint8_t*>(copy.words.data()), copy.words.size() * 8};
  sample.stack_user_requested = sample.stack_user.size();  // a whole record's padded size
}

bool AllocStackDecoder::Rebuild(const SampleView& sample, uint64_t sp, Copy& copy) {
  const std::span<const uint8_t> data = sample.stack_user;
  if (data.size() < 8 || data.size() % 8 != 0) return false;
  uint64_t bytes;
  std::memcpy(&bytes, data.data(), 8);
  // The copy is never larger than the session asked for.
  if (bytes == 0 || bytes % 8 != 0 || bytes > max_bytes_) return false;
  const size_t words = bytes / 8;
  const uint64_t last_end = copy.sp + copy.words.size() * 8;
  const bool in_place = sp == copy.sp && words == copy.words.size();
  if (!in_place) {
    // Words outside the last copy must all come in runs; zero them so a bad record cannot show
    // what an earlier one left in the scratch buffer.
    if ((sp - copy.sp) % 8 != 0) return false;
    scratch_.assign(words, 0);
    const uint64_t lo = std::max(sp, copy.sp);
    const uint64_t hi = std::min(sp + bytes, last_end);
    if (lo < hi) {
      std::memcpy(scratch_.data() + (lo - sp) / 8, copy.words.data() + (lo - copy.sp) / 8, hi - lo);
    }
  }
  uint64_t* out = in_place ? copy.words.data() : scratch_.data();
  size_t at = 8;
  while (at < data.size()) {
    if (data.size() - at < sizeof(alloc_channel::StackRun)) return false;
    alloc_channel::StackRun run;
    std::memcpy(&run, data.data() + at, sizeof(run));
    at += sizeof(run);
    const size_t run_bytes = size_t{run.words} * 8;
    if (run.word > words || run.words > words - run.word || run_bytes > data.size() - at) {
      return false;
    }
    std::memcpy(out + run.word, data.data() + at, run_bytes);
    at += run_bytes;
  }
  if (!in_place) {
    copy.words.swap(scratch_);
    copy.sp = sp;
  }
  return true;
}

}  // namespace nativeprof::sampler
