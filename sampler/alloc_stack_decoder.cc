#include "sampler/alloc_stack_decoder.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "sampler/alloc_channel_layout.h"

namespace nativeprof::sampler {

AllocStackDecoder::AllocStackDecoder(uint64_t sample_regs_user, uint32_t sample_stack_user)
    : regs_(sample_regs_user), max_bytes_(sample_stack_user) {}

void AllocStackDecoder::OnAlloc(SampleView& sample) {
  const uint64_t key = Key(sample.pid, sample.tid);
  const int sp_index = regs_.sp_index();
  if (sample.id != alloc_channel::kAllocDeltaSampleId) {
    // The preload keeps a whole copy as its next base only when it is whole words.
    const size_t bytes = sample.stack_user.size();
    // A copy must not wrap around the address space: the window's places are its addresses.
    if (sp_index < 0 || static_cast<size_t>(sp_index) >= sample.regs_user.size() ||
        bytes == 0 || bytes % 8 != 0 || sample.regs_user[sp_index] > UINT64_MAX - bytes) {
      copies_.erase(key);
      return;
    }
    Copy& copy = copies_[key];
    copy.sp = sample.regs_user[sp_index];
    copy.size = bytes / 8;
    copy.end = copy.sp + bytes;
    copy.deltas = 0;
    const size_t capacity = std::max<size_t>(copy.size, max_bytes_ / 8);
    if (copy.window.size() < capacity) copy.window.assign(capacity, 0);
    std::memcpy(copy.At(copy.sp), sample.stack_user.data(), bytes);
    return;
  }
  auto it = copies_.find(key);
  if (sp_index < 0 || it == copies_.end() || !Rebuild(sample, it->second)) {
    ++undecodable_;
    if (it != copies_.end()) copies_.erase(it);
    sample.stack_user = {};
    return;
  }
  Copy& copy = it->second;
  sample.stack_user = {reinterpret_cast<const uint8_t*>(copy.At(copy.sp)), copy.size * 8};
  sample.stack_user_requested = sample.stack_user.size();  // a whole record's padded size
  sample.regs_abi = PERF_SAMPLE_REGS_ABI_64;
  sample.regs_user = copy.regs;
}

bool AllocStackDecoder::Rebuild(const SampleView& sample, Copy& copy) {
  const std::span<const uint8_t> data = sample.stack_user;
  constexpr size_t kHeaderBytes = alloc_channel::kDeltaHeaderWords * 8;
  if (data.size() < kHeaderBytes || data.size() % 8 != 0) return false;
  uint64_t header[alloc_channel::kDeltaHeaderWords];
  std::memcpy(header, data.data(), kHeaderBytes);
  const uint64_t bytes = header[0] & 0xffffffffu, bp = header[1], sp = header[2], ip = header[3];
  // A delta builds on the thread's record just before it; a gap in the sequence means that one
  // never arrived, and neither can be trusted.
  const uint32_t sequence = static_cast<uint32_t>(header[0] >> 32);
  if (sequence != copy.deltas + 1) return false;
  // The copy is never larger than the session asked for.
  if (bytes == 0 || bytes % 8 != 0 || bytes > max_bytes_) return false;
  const size_t words = bytes / 8;
  if ((sp - copy.sp) % 8 != 0 || words > copy.window.size() || sp > UINT64_MAX - bytes) {
    return false;
  }
  const uint64_t end = sp + bytes;
  const uint64_t last_end = copy.sp + copy.size * 8;
  // [lo, hi): the last copy's words this one keeps, unless a run replaces them.
  const uint64_t lo = std::max(sp, copy.sp);
  const uint64_t hi = std::min(end, last_end);
  if (end != copy.end) {
    // The copy ends elsewhere: the kept words move to their places for the new end.
    const uint64_t* from = lo < hi ? copy.At(lo) : nullptr;
    copy.end = end;
    if (from != nullptr) std::memmove(copy.At(lo), from, hi - lo);
  }
  uint64_t* out = copy.At(sp);
  // Words outside the last copy must all come in runs; zero them so a bad record cannot show
  // what an earlier one left in the window. Only those: zeroing the whole copy (8 KiB for a main
  // thread) on every record was a seventh of the drain's work.
  if (lo < hi) {
    std::fill(out, copy.At(lo), 0);
    std::fill(copy.At(hi), out + words, 0);
  } else {
    std::fill_n(out, words, 0);
  }
  size_t at = kHeaderBytes;
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
  copy.sp = sp;
  copy.size = words;
  copy.deltas = sequence;
  regs_.Update(ip, sp, bp, &copy.regs);  // what the whole record would have carried
  return true;
}

}  // namespace nativeprof::sampler
