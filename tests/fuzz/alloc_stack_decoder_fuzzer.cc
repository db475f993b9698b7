// libFuzzer target for the profiler's rebuilding of the allocation preload's stack copies
// (sampler/alloc_stack_decoder.h) from records it did not write: whole copies and deltas
// (kAllocDeltaSampleId) with any header, sp, size and runs, for a few threads, and their exits.
// Whatever the input, a rebuilt stack is whole words, no longer than the session's copy size, and
// lies in the decoder's own memory (every byte of it is read: ASan reports anything else); a
// delta that cannot be rebuilt leaves its sample without a stack. Input layout:
//   [0] the session's other registers (bits 0-5: perf_regs 0-5, beside bp, sp and ip)
//   [1..2] the session's copy size (8..16391, so not always whole words)
//   then records: [kind: bit 0 delta, bit 1 a thread exit first, bits 2-3 tid]
//                 [length, 2 bytes] [length bytes: a whole copy's sp (8 bytes) then its stack,
//                  or a delta's stack field as is]
#include <asm/perf_regs.h>
#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "sampler/alloc_channel_layout.h"
#include "sampler/alloc_stack_decoder.h"
#include "sampler/records.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

namespace ac = nativeprof::alloc_channel;
using nativeprof::sampler::AllocStackDecoder;
using nativeprof::fuzz::Check;
using nativeprof::sampler::SampleView;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint64_t regs_mask = (data[0] & 0x3fu) | uint64_t{1} << PERF_REG_X86_BP |
                             uint64_t{1} << PERF_REG_X86_SP | uint64_t{1} << PERF_REG_X86_IP;
  const size_t regs_count = static_cast<size_t>(__builtin_popcountll(regs_mask));
  const size_t sp_index =
      static_cast<size_t>(__builtin_popcountll(regs_mask & ((uint64_t{1} << PERF_REG_X86_SP) - 1)));
  const uint32_t copy_bytes = 8 + (static_cast<uint32_t>(data[1] | data[2] << 8) % 16384);
  AllocStackDecoder decoder(regs_mask, copy_bytes);
  size_t at = 3;
  while (at + 3 <= size) {
    const uint8_t kind = data[at];
    const size_t length = data[at + 1] | size_t{data[at + 2]} << 8;
    at += 3;
    if (length > size - at) break;
    const uint8_t* payload = data + at;
    at += length;
    const uint32_t tid = 1 + ((kind >> 2) & 3);
    if (kind & 2) decoder.OnThreadExit(1, tid);
    SampleView s;
    s.pid = 1;
    s.tid = tid;
    std::vector<uint64_t> regs(regs_count, 0);
    std::vector<uint8_t> stack;
    if (kind & 1) {
      s.id = ac::kAllocDeltaSampleId;
      stack.assign(payload, payload + length);
      s.regs_abi = PERF_SAMPLE_REGS_ABI_NONE;
    } else {
      if (length < 8) continue;
      s.id = ac::kAllocSampleId;
      std::memcpy(&regs[sp_index], payload, 8);
      stack.assign(payload + 8, payload + length);
      s.regs_abi = PERF_SAMPLE_REGS_ABI_64;
      s.regs_user = regs;
    }
    s.stack_user = stack;
    decoder.OnAlloc(s);
    if (s.id == ac::kAllocDeltaSampleId && !s.stack_user.empty()) {
      Check(s.stack_user.size() % 8 == 0 && s.stack_user.size() <= copy_bytes);
      uint64_t sum = 0;
      for (uint8_t b : s.stack_user) sum += b;
      Check(s.regs_user.size() == regs_count);
      __asm__ volatile("" : : "r"(sum));
    }
  }
  return 0;
}
