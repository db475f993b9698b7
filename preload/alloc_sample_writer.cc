#include "preload/alloc_sample_writer.h"

#include <asm/perf_regs.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

namespace nativeprof::preload {
namespace {

using alloc_channel::Control;

constexpr uint64_t kSupportedSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
    PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
    PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
// The perf_regs indexes of what a call site defines.
constexpr int kRegBp = PERF_REG_X86_BP, kRegSp = PERF_REG_X86_SP, kRegIp = PERF_REG_X86_IP;
constexpr size_t kMaxRegs = 64;

uint64_t NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

perf_event_mmap_page* RingMeta(Control& c) {
  return reinterpret_cast<perf_event_mmap_page*>(reinterpret_cast<char*>(&c) + c.ring_offset);
}

uintptr_t HexDigit(char c) {
  return static_cast<uintptr_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
}

// The mapping [lo, hi) that holds `sp`, from /proc/self/maps read with plain syscalls (no
// allocation); false when none does.
bool FindMapping(uintptr_t sp, uintptr_t* lo_out, uintptr_t* hi_out) {
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  size_t have = 0;
  bool found = false;
  bool eof = false;
  while (!found && !eof) {
    const ssize_t n = ::read(fd, buf + have, sizeof(buf) - have);
    if (n <= 0) {
      eof = true;
    } else {
      have += static_cast<size_t>(n);
    }
    size_t line = 0;
    for (size_t i = 0; i < have && !found; ++i) {
      if (buf[i] != '\n') continue;
      // "lo-hi perms ...": two hex numbers.
      uintptr_t lo = 0, hi = 0;
      size_t k = line;
      for (; k < i && buf[k] != '-'; ++k) lo = lo * 16 + HexDigit(buf[k]);
      for (++k; k < i && buf[k] != ' '; ++k) hi = hi * 16 + HexDigit(buf[k]);
      if (lo <= sp && sp < hi) {
        *lo_out = lo;
        *hi_out = hi;
        found = true;
      }
      line = i + 1;
    }
    std::memmove(buf, buf + line, have - line);
    have -= line;
    if (have == sizeof(buf)) have = 0;  // a line longer than the buffer: skip it
  }
  ::close(fd);
  return found;
}

// The highest address of the stack `sp` is on, so a copy from sp never runs past its mapping.
// Not pthread_getattr_np: it takes the thread's lock and allocates under it, so calling it from
// an allocation it made deadlocks. The mapping is looked up once per thread and again whenever
// sp leaves it (the main thread's stack grew, or sp is on a signal or coroutine stack). A glibc
// thread's descriptor (pthread_self) sits at the top of its own stack, right above the frames.
uintptr_t StackTop(ThreadState& t, uintptr_t sp) {
  if (t.stack_top == 0 || sp < t.stack_lo || sp >= t.stack_hi) {
    uintptr_t lo = 0, hi = 0;
    if (!FindMapping(sp, &lo, &hi)) return 0;  // copy nothing
    t.stack_lo = lo;
    t.stack_hi = hi;
    const uintptr_t self = reinterpret_cast<uintptr_t>(pthread_self());
    t.stack_top = t.tid != t.pid && self > sp && self <= hi ? self : hi;
  }
  return t.stack_top;
}

// The profiler's hint of where this thread's stack copies may end (alloc_channel::StackHint);
// 0 when it has none.
uintptr_t StackHigh(const Control& c, uint32_t tid) {
  for (size_t probe = 0; probe < alloc_channel::kHintProbes; ++probe) {
    const alloc_channel::StackHint& h = c.hints[alloc_channel::HintSlot(tid, probe)];
    const uint32_t owner = h.tid.load(std::memory_order_acquire);
    if (owner == tid) return h.stack_high.load(std::memory_order_relaxed);
    if (owner == 0) return 0;
  }
  return 0;
}

void Lock(Control& c) {
  for (int spins = 0; c.ring_lock.exchange(1, std::memory_order_acquire) != 0; ++spins) {
    if (spins > 64) sched_yield();
  }
}
void Unlock(Control& c) { c.ring_lock.store(0, std::memory_order_release); }

void Wake(Control& c) {
  if (c.wake_pending.exchange(1, std::memory_order_acq_rel) != 0) return;
  // Opened once per process image (the profiler holds the read end); a fork shares it.
  static std::atomic<int> wake_fd{-2};
  int fd = wake_fd.load(std::memory_order_relaxed);
  if (fd == -2) {
    fd = ::open(c.wake_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    wake_fd.store(fd, std::memory_order_relaxed);
  }
  if (fd >= 0) (void)!::write(fd, "w", 1);
}

// Waits, holding the lock, until `size` bytes are free; false if the reader is gone or too slow.
bool WaitForSpace(Control& c, perf_event_mmap_page* meta, uint64_t head, uint64_t size) {
  const uint64_t data_bytes = c.ring_data_bytes;
  uint64_t waited_since = 0;
  while (data_bytes - (head - __atomic_load_n(&meta->data_tail, __ATOMIC_ACQUIRE)) < size) {
    if (c.reader_gone.load(std::memory_order_relaxed) != 0) return false;
    const uint64_t now = NowNs();
    if (waited_since == 0) waited_since = now;
    if (now - waited_since > kMaxWaitNs) return false;
    Wake(c);
    timespec pause{0, 50'000};
    ::nanosleep(&pause, nullptr);
  }
  return true;
}

struct SampleFields {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t cpu = 0;
  uint64_t id = 0;
  uint64_t ip = 0;
  uint64_t addr = 0;
  uint64_t period = 0;
  uint64_t time_ns = 0;
  const uint64_t* regs = nullptr;  // indexed by perf_regs index; null: no user registers
  const uint8_t* stack = nullptr;
  size_t stack_bytes = 0;
};

// Counts the bytes a record takes.
class SizeCounter {
 public:
  void Bytes(const void*, size_t n) { size_ += n; }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

// Copies a record straight into the ring at `head` (the stack copy is too big to stage on the
// target's own stack), wrapping at the end of the data area.
class RingWriter {
 public:
  RingWriter(uint8_t* data, uint64_t mask, uint64_t head) : data_(data), mask_(mask), at_(head) {}
  void Bytes(const void* p, size_t n) {
    const uint8_t* from = static_cast<const uint8_t*>(p);
    while (n > 0) {
      const uint64_t offset = at_ & mask_;
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, mask_ + 1 - offset));
      std::memcpy(data_ + offset, from, chunk);
      from += chunk;
      at_ += chunk;
      n -= chunk;
    }
  }

 private:
  uint8_t* data_;
  uint64_t mask_;
  uint64_t at_;
};

template <typename Out>
void U64(Out& out, uint64_t v) {
  out.Bytes(&v, 8);
}

// Writes the fields in perf's order for c.sample_type (perf_output_sample).
template <typename Out>
void Encode(const Control& c, const SampleFields& f, uint16_t size, Out& out) {
  const perf_event_header h{PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, size};
  out.Bytes(&h, sizeof(h));
  const uint64_t st = c.sample_type;
  if (st & PERF_SAMPLE_IDENTIFIER) U64(out, f.id);
  if (st & PERF_SAMPLE_IP) U64(out, f.ip);
  if (st & PERF_SAMPLE_TID) {
    const uint32_t ids[2] = {f.pid, f.tid};
    out.Bytes(ids, 8);
  }
  if (st & PERF_SAMPLE_TIME) U64(out, f.time_ns);
  if (st & PERF_SAMPLE_ADDR) U64(out, f.addr);
  if (st & PERF_SAMPLE_CPU) {
    const uint32_t fields[2] = {f.cpu, 0};
    out.Bytes(fields, 8);
  }
  if (st & PERF_SAMPLE_PERIOD) U64(out, f.period);
  if (st & PERF_SAMPLE_CALLCHAIN) U64(out, 0);  // no frames: the profiler unwinds the stack copy
  if (st & PERF_SAMPLE_REGS_USER) {
    if (f.regs == nullptr) {
      U64(out, PERF_SAMPLE_REGS_ABI_NONE);
    } else {
      U64(out, PERF_SAMPLE_REGS_ABI_64);
      for (uint64_t rest = c.sample_regs_user; rest != 0; rest &= rest - 1) {
        U64(out, f.regs[__builtin_ctzll(rest)]);
      }
    }
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    if (f.regs == nullptr || f.stack_bytes == 0) {
      U64(out, 0);
    } else {
      const size_t padded = (f.stack_bytes + 7) & ~size_t{7};
      U64(out, padded);
      out.Bytes(f.stack, f.stack_bytes);
      static const uint8_t kZero[8] = {};
      out.Bytes(kZero, padded - f.stack_bytes);
      U64(out, f.stack_bytes);
    }
  }
}

void FillIdentity(ThreadState& t, SampleFields& f) {
  if (t.tid == 0) {
    t.pid = static_cast<uint32_t>(::getpid());
    t.tid = static_cast<uint32_t>(::gettid());
  }
  f.pid = t.pid;
  f.tid = t.tid;
  const int cpu = sched_getcpu();
  f.cpu = cpu < 0 ? 0u : static_cast<uint32_t>(cpu);
}

bool Publish(Control& c, SampleFields& f) {
  SizeCounter counter;
  Encode(c, f, 0, counter);
  const size_t size = counter.size();
  perf_event_mmap_page* meta = RingMeta(c);
  uint8_t* data = reinterpret_cast<uint8_t*>(meta) + meta->data_offset;
  Lock(c);
  const uint64_t head = meta->data_head;  // only writers holding the lock move it
  if (!WaitForSpace(c, meta, head, size)) {
    Unlock(c);
    c.lost_samples.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // Taken under the lock, so the ring is in time order across every writer.
  f.time_ns = NowNs();
  RingWriter writer(data, c.ring_data_bytes - 1, head);
  Encode(c, f, static_cast<uint16_t>(size), writer);
  __atomic_store_n(&meta->data_head, head + size, __ATOMIC_RELEASE);
  const uint64_t used = head + size - __atomic_load_n(&meta->data_tail, __ATOMIC_ACQUIRE);
  Unlock(c);
  if (used >= c.ring_data_bytes / 4) Wake(c);
  return true;
}

}  // namespace

bool SampleLayoutSupported(const Control& c) {
  return (c.sample_type & ~kSupportedSampleType) == 0 && (c.sample_type & PERF_SAMPLE_IDENTIFIER) &&
         c.ring_data_bytes != 0 && (c.ring_data_bytes & (c.ring_data_bytes - 1)) == 0 &&
         c.stack_user_bytes <= 60000;  // a record's size is a u16
}

bool WriteAllocSample(ThreadState& t, Control& c, CallSite site, const void* user, size_t size) {
  // The hook's frame: [saved caller rbp][return address], then the caller's stack.
  const uint64_t* frame = static_cast<const uint64_t*>(site.hook_frame);
  const uint64_t return_address = frame[1];
  const uintptr_t caller_sp = reinterpret_cast<uintptr_t>(frame + 2);
  uint64_t regs[kMaxRegs] = {};
  regs[kRegBp] = frame[0];
  regs[kRegSp] = caller_sp;
  // The call instruction, not the one after it: the caller's leaf frame then names the line of
  // the call, and the unwinder looks up the call's CFI row as for any interrupted instruction.
  regs[kRegIp] = return_address - 1;
  SampleFields f;
  FillIdentity(t, f);  // first: StackTop tells the main thread by its tid
  uintptr_t top = StackTop(t, caller_sp);
  // Nothing the unwinder reads lies above the hint; the stack's own end still bounds it (a hint
  // left by an earlier image of this tid, after an exec, may be anywhere).
  if (const uintptr_t high = StackHigh(c, t.tid); high > caller_sp && high < top) top = high;
  size_t stack_bytes = 0;
  if (top > caller_sp) {
    stack_bytes = static_cast<size_t>(std::min<uintptr_t>(top - caller_sp, c.stack_user_bytes));
  }
  f.id = alloc_channel::kAllocSampleId;
  f.ip = regs[kRegIp];
  f.addr = reinterpret_cast<uintptr_t>(user);
  f.period = size;
  f.regs = regs;
  f.stack = reinterpret_cast<const uint8_t*>(caller_sp);
  f.stack_bytes = stack_bytes;
  return Publish(c, f);
}

void WriteFreeSample(ThreadState& t, Control& c, const void* user, bool temporary) {
  SampleFields f;
  f.id = alloc_channel::kFreeSampleId;
  f.addr = reinterpret_cast<uintptr_t>(user);
  f.period = temporary ? alloc_channel::kFreeTemporary : 0;
  FillIdentity(t, f);
  (void)Publish(c, f);
}

}  // namespace nativeprof::preload
