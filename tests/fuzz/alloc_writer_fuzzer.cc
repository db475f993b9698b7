// libFuzzer target for the allocation preload's record writer (preload/alloc_sample_writer.cc),
// which runs inside the profiled program: it writes sampled allocations and frees into the
// channel's ring, and the profiler's ParseRecord reads them back. Each input configures a channel
// (sample layout, register mask, stack-copy size, ring size, where the ring's head stands, a stack
// hint) and a caller's stack, then writes up to four records in a row, wrapping the ring. Every
// record written must parse back as one sample with exactly what was written: its identifier,
// pid/tid, address, period, the caller's registers and the bytes of its stack, never more than
// the stack holds. A record that cannot fit is dropped and counted, never half-written. Between
// writes, the input changes a word of the stack or moves sp, so allocations after the first go
// as deltas (kAllocDeltaSampleId), which the profiler's AllocStackDecoder must rebuild into
// exactly the stack's bytes.
// Input layout:
//   [0..1] sample_type selector  [2] regs mask width  [3..4] stack-copy bytes  [5] ring size
//   [6..7] ring head  [8] hint  [9] operations (2 bits each: alloc, free, temporary free)
//   [10..17] allocation size (its bytes 1..3 also pick, before writes 1..3, a stack word to
//   change and whether sp moves)  [18..] the caller's stack (its first 16 bytes: saved rbp,
//   return address)
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "preload/alloc_sample_writer.h"
#include "sampler/alloc_stack_decoder.h"
#include "sampler/alloc_channel_layout.h"
#include "sampler/record_parser.h"
#include "sampler/records.h"

// The hooks give a batched free's block back to its allocator (alloc_hooks.cc, not compiled in
// here). The fuzzer's threads have no batch (ThreadState::batch is null): nothing is batched.
void nativeprof::preload::ReleaseBatchedBlock(uint64_t) { std::abort(); }

namespace {

namespace ac = nativeprof::alloc_channel;
using nativeprof::preload::CallSite;
using nativeprof::preload::ThreadState;
using nativeprof::sampler::SampleView;

constexpr size_t kPage = 4096;
constexpr size_t kMaxRing = 64 * 1024;
// The writer takes the ids from the kernel (and checks them against its fork marker).
const uint32_t kPid = static_cast<uint32_t>(getpid()), kTid = static_cast<uint32_t>(gettid());
constexpr uint64_t kOptionalBits[] = {PERF_SAMPLE_IP,     PERF_SAMPLE_TID,      PERF_SAMPLE_TIME,
                                      PERF_SAMPLE_ADDR,   PERF_SAMPLE_CPU,      PERF_SAMPLE_PERIOD,
                                      PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_REGS_USER,
                                      PERF_SAMPLE_STACK_USER};

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "alloc_writer_fuzzer:%d: CHECK(%s)\n", __LINE__, #cond); \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

// The control block and its ring, as AllocChannel lays them out in the shared file.
struct Channel {
  Channel() {
    bytes = static_cast<uint8_t*>(std::aligned_alloc(kPage, Size()));
    std::memset(bytes, 0, Size());
    control = new (bytes) ac::Control();
    control->ring_offset = ac::RingOffset(kPage);
  }
  static size_t Size() { return ac::RingOffset(kPage) + kPage + kMaxRing; }
  perf_event_mmap_page* meta() const {
    return reinterpret_cast<perf_event_mmap_page*>(bytes + control->ring_offset);
  }
  uint8_t* data() const { return reinterpret_cast<uint8_t*>(meta()) + kPage; }
  uint8_t* bytes;
  ac::Control* control;
};

class OneSample : public nativeprof::sampler::RecordSink {
 public:
  void OnSample(const SampleView& s) override {
    ++samples;
    last = s;
  }
  void OnMmap(const nativeprof::sampler::MmapView&) override { ++others; }
  void OnComm(const nativeprof::sampler::CommView&) override { ++others; }
  void OnTask(const nativeprof::sampler::TaskView&) override { ++others; }
  void OnLost(const nativeprof::sampler::LostView&) override { ++others; }
  int others = 0;
  int samples = 0;
  SampleView last;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 34) return 0;
  static Channel* channel = new Channel();
  ac::Control& c = *channel->control;
  perf_event_mmap_page* meta = channel->meta();

  uint64_t sample_type = PERF_SAMPLE_IDENTIFIER;
  const uint16_t selector = static_cast<uint16_t>(data[0] | data[1] << 8);
  for (size_t i = 0; i < std::size(kOptionalBits); ++i) {
    if (selector & (1u << i)) sample_type |= kOptionalBits[i];
  }
  const unsigned regs = data[2] % 65;
  c.sample_type = sample_type;
  c.sample_regs_user = regs == 64 ? ~uint64_t{0} : (uint64_t{1} << regs) - 1;
  c.stack_user_bytes = static_cast<uint32_t>((data[3] | data[4] << 8) % 20000);
  c.ring_data_bytes = size_t{kPage} << (data[5] % 5);  // 4 to 64 KiB
  c.tsc_clock = data[5] >> 7;  // times extrapolated from the TSC (preload/record_clock.h)
  c.wake_path[0] = '\0';                                // waking opens nothing
  // The profiler has stopped reading: a record that does not fit is dropped at once, not
  // waited for.
  c.reader_gone.store(1);
  c.lost_samples.store(0);
  const uint64_t head = (static_cast<uint64_t>(data[6] | data[7] << 8) * 8) % c.ring_data_bytes +
                        c.ring_data_bytes * 3;  // positions only grow
  meta->data_offset = kPage;
  meta->data_size = c.ring_data_bytes;
  meta->data_head = head;
  meta->data_tail = head;
  if (!nativeprof::preload::SampleLayoutSupported(c)) return 0;

  // The caller's stack: an 8-aligned copy of the input's tail. The thread's known stack is
  // exactly this buffer, so a copy never reads past it.
  const size_t stack_len = ((size - 18) & ~size_t{7});
  if (stack_len < 24) return 0;  // sp (past the saved rbp and return address) lies on it
  std::vector<uint64_t> stack(stack_len / 8);
  std::memcpy(stack.data(), data + 18, stack_len);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(stack.data());
  const uintptr_t hi = lo + stack_len;
  // The hook's frame (saved rbp, return address) sits right below the caller's sp; moving sp
  // moves the frame with it.
  size_t frame_word = 0;

  for (ac::StackHint& h : c.hints) {
    h.tid.store(0);
    h.stack_high.store(0);
  }
  uintptr_t hint = 0;
  if (data[8] != 0) {
    hint = lo + (static_cast<uintptr_t>(data[8]) * 8) % (stack_len + 64);  // may lie outside
    ac::StackHint& h = c.hints[ac::HintSlot(kTid, 0)];
    h.stack_high.store(hint);
    h.tid.store(kTid);
  }

  ThreadState t;
  t.stack_lo = lo;
  t.stack_hi = hi;
  t.stack_top = hi;
  uint64_t alloc_size;
  std::memcpy(&alloc_size, data + 10, 8);
  const void* user = reinterpret_cast<const void*>(0x7f0000001000ull + (alloc_size & 0xfff0));

  perf_event_attr attr{};
  attr.sample_type = c.sample_type;
  attr.sample_regs_user = c.sample_regs_user;
  attr.sample_stack_user = c.stack_user_bytes;
  attr.sample_id_all = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  const auto format = nativeprof::sampler::SampleFormat::FromAttr(attr);

  uint64_t at = head;
  uint64_t lost = 0;
  uint64_t last_time = 0;
  nativeprof::sampler::AllocStackDecoder decoder(c.sample_regs_user, c.stack_user_bytes);
  for (int op = 0; op < 4; ++op) {
    const unsigned kind = (data[9] >> (2 * op)) & 3;
    if (op > 0) {
      const uint8_t change = data[10 + op];
      stack[2 + change % (stack.size() - 2)] ^= uint64_t{change} << 24 | 1;
      if (change & 0x80) frame_word = (frame_word + change) % (stack.size() - 2);
    }
    const uint64_t* frame = stack.data() + frame_word;
    const uintptr_t caller_sp = reinterpret_cast<uintptr_t>(frame + 2);
    bool written;
    if (kind == 0) {
      written = nativeprof::preload::WriteAllocSample(t, c, CallSite{frame}, user, alloc_size);
    } else if (kind == 1 || kind == 2) {
      nativeprof::preload::WriteFreeSample(t, c, user, kind == 2);
      written = meta->data_head != at;
    } else {
      continue;
    }
    if (!written) {
      CHECK(meta->data_head == at);  // nothing half-written
      CHECK(c.lost_samples.load() == ++lost);
      continue;
    }
    const uint64_t end = meta->data_head;
    CHECK(end > at && (end - at) % 8 == 0 && end - at <= c.ring_data_bytes);
    // Read it back as the profiler's RingBuffer would: unwrapped into aligned memory.
    std::vector<uint64_t> record((end - at) / 8);
    auto* out = reinterpret_cast<uint8_t*>(record.data());
    for (uint64_t i = 0; i < end - at; ++i) {
      out[i] = channel->data()[(at + i) & (c.ring_data_bytes - 1)];
    }
    perf_event_header h;
    std::memcpy(&h, out, sizeof(h));
    CHECK(h.type == (kind == 0 ? PERF_RECORD_SAMPLE : ac::kFreeRecordType) && h.size == end - at);
    OneSample sink;
    auto parsed = nativeprof::sampler::ParseRecord({out, end - at}, format, sink);
    CHECK(parsed.ok() && sink.samples == 1 && sink.others == 0);
    SampleView s = sink.last;
    if (kind == 0) {
      CHECK(s.id == ac::kAllocSampleId || s.id == ac::kAllocDeltaSampleId);
      decoder.OnAlloc(s);
      CHECK(decoder.undecodable() == 0);
    } else {
      CHECK(s.id == ac::kFreeSampleId);
    }
    // A free's record (alloc_channel::FreeRecord) has these whatever the session's layout.
    const bool free = kind != 0;
    if (free || (sample_type & PERF_SAMPLE_TID)) CHECK(s.pid == kPid && s.tid == kTid);
    if (free || (sample_type & PERF_SAMPLE_ADDR)) {
      CHECK(s.addr == reinterpret_cast<uintptr_t>(user));
    }
    if (free || (sample_type & PERF_SAMPLE_PERIOD)) {
      CHECK(s.period == (kind == 0 ? alloc_size : kind == 2 ? ac::kFreeTemporary : 0));
    }
    if (free || (sample_type & PERF_SAMPLE_TIME)) {
      CHECK(s.time_ns != 0 &&
            nativeprof::sampler::RecordTime({out, end - at}, format) ==
                ((sample_type & PERF_SAMPLE_TIME) ? s.time_ns : 0));
      CHECK(s.time_ns >= last_time);  // the ring stays in time order
      last_time = s.time_ns;
    }
    if (sample_type & PERF_SAMPLE_CALLCHAIN) CHECK(s.callchain.empty());
    if (kind == 0 && (sample_type & PERF_SAMPLE_REGS_USER)) {
      CHECK(s.regs_abi == PERF_SAMPLE_REGS_ABI_64);
      CHECK(s.regs_user.size() == static_cast<size_t>(__builtin_popcountll(c.sample_regs_user)));
      // The mask is the low `regs` bits, so a register's value is at its perf_regs index; the
      // ip is the call instruction, one before the return address.
      if (regs > PERF_REG_X86_BP) CHECK(s.regs_user[PERF_REG_X86_BP] == frame[0]);
      if (regs > PERF_REG_X86_SP) CHECK(s.regs_user[PERF_REG_X86_SP] == caller_sp);
      if (regs > PERF_REG_X86_IP) CHECK(s.regs_user[PERF_REG_X86_IP] == frame[1] - 1);
    }
    if (sample_type & PERF_SAMPLE_STACK_USER) {
      // Only an allocation copies its caller's stack: up to the hint when the hint lies on
      // the stack above sp, else to the stack's end, and never more than the channel asks.
      const uintptr_t top = hint > caller_sp && hint < hi ? hint : hi;
      const size_t expect_bytes =
          kind != 0 ? 0 : std::min<uintptr_t>(top - caller_sp, c.stack_user_bytes);
      CHECK(s.stack_user.size() == expect_bytes);
      CHECK(s.stack_user.empty() ||
            std::memcmp(s.stack_user.data(), reinterpret_cast<const void*>(caller_sp),
                        s.stack_user.size()) == 0);
    }
    at = end;
    meta->data_tail = end;  // drained
  }
  nativeprof::preload::ReleaseStackCopy(t);
  return 0;
}
