#include "preload/alloc_sample_writer.h"

#include <asm/perf_regs.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <emmintrin.h>
#include <x86intrin.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "preload/record_clock.h"

extern "C" {
extern void* __libc_stack_end;  // glibc's: the main thread's sp as _start began
void* __libc_malloc(size_t size);
void __libc_free(void* ptr);
}

namespace nativeprof::preload {
namespace {

using alloc_channel::Control;

constexpr uint64_t kSupportedSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
    PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
    PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
// The perf_regs indexes of what a call site defines.
constexpr int kRegBp = PERF_REG_X86_BP, kRegSp = PERF_REG_X86_SP, kRegIp = PERF_REG_X86_IP;

// The writer's system calls, made raw: glibc's wrappers of these are cancellation points, and a
// thread cancelled inside one would leave malloc or free by unwinding, the ring lock held.
int RawOpen(const char* path, int flags) {
  return static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, flags, 0));
}
ssize_t RawRead(int fd, void* buf, size_t n) { return ::syscall(SYS_read, fd, buf, n); }
ssize_t RawWrite(int fd, const void* buf, size_t n) { return ::syscall(SYS_write, fd, buf, n); }
void RawClose(int fd) { (void)::syscall(SYS_close, fd); }
void RawSleep(long ns) {
  const timespec pause{0, ns};
  (void)::syscall(SYS_nanosleep, &pause, nullptr);
}

// The record clock's sources (record_clock.h).
struct ClockSources {
  uint64_t Tsc() const { return __rdtsc(); }
  uint64_t MonotonicNs() const { return MonotonicNowNs(); }
};

perf_event_mmap_page* RingMeta(Control& c) {
  return reinterpret_cast<perf_event_mmap_page*>(reinterpret_cast<char*>(&c) + c.ring_offset);
}

uintptr_t HexDigit(char c) {
  return static_cast<uintptr_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
}

// The mapping [lo, hi) that holds `sp`, from /proc/self/maps read with plain syscalls (no
// allocation); false when none does.
bool FindMapping(uintptr_t sp, uintptr_t* lo_out, uintptr_t* hi_out) {
  const int fd = RawOpen("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  size_t have = 0;
  bool found = false;
  bool eof = false;
  while (!found && !eof) {
    const ssize_t n = RawRead(fd, buf + have, sizeof(buf) - have);
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
  RawClose(fd);
  return found;
}

// Whether the 8 bytes at `address` (8-aligned) can be read, asked of the kernel without a
// descriptor: rt_sigprocmask reads the new mask before it looks at `how`, so with an invalid
// `how` it fails with EFAULT where the read would fault and EINVAL where it would not, and
// changes nothing. (Not process_vm_readv: sandboxes' seccomp filters deny it, some by SIGSYS.)
bool Readable(uintptr_t address) {
  return ::syscall(SYS_rt_sigprocmask, -1, reinterpret_cast<void*>(address), nullptr,
                   sizeof(uint64_t)) != 0 &&
         errno == EINVAL;
}

// Where the stack that holds `sp` ends by what the thread knows of it, when /proc/self/maps
// cannot be opened (the program has used up its RLIMIT_NOFILE): the main thread's stack ends
// above __libc_stack_end (its sp at _start, with argc and the argument vector above it), another
// glibc thread's at its descriptor. Only pages from sp's up that are Readable count, so a sp on
// a signal or coroutine stack, where that end may lie beyond unmapped or guard pages, yields a
// shorter copy rather than a fault. When every page from sp's to the end was read (at most
// kMaxProbedPages), [*lo_out, *hi_out) is set to them, to be kept as the stack's mapping; a
// deeper sp probes only the `limit` bytes it copies, each time.
uintptr_t GuessStackTop(uintptr_t sp, size_t limit, uintptr_t* lo_out, uintptr_t* hi_out) {
  constexpr uintptr_t kPage = 4096;
  constexpr uintptr_t kMaxProbedPages = 256;
  // A glibc thread's descriptor lies right above its stack; the main thread's lies in the
  // loader's TLS block, below the main stack. So a descriptor above sp marks a thread's stack,
  // a process's main thread's too when it was forked from a secondary thread. 48 bytes above
  // __libc_stack_end are always there: argc, argv[0] or its null, envp's null and auxv's
  // AT_NULL pair.
  const uintptr_t self = reinterpret_cast<uintptr_t>(pthread_self());
  const uintptr_t end = self > sp ? self : reinterpret_cast<uintptr_t>(__libc_stack_end) + 48;
  if (end <= sp) return 0;
  const uintptr_t first = sp & ~(kPage - 1);
  const bool whole = (end - first) / kPage <= kMaxProbedPages;
  const uintptr_t want = whole ? end : std::min<uintptr_t>(end, sp + limit);
  uintptr_t readable = first;
  while (readable < want && Readable(readable)) readable += kPage;
  if (readable <= sp) return 0;
  if (whole && readable >= want) {
    *lo_out = first;
    *hi_out = end;
  }
  return std::min(readable, want);
}

// The highest address of the stack `sp` is on, so a copy from sp never runs past its mapping.
// Not pthread_getattr_np: it takes the thread's lock and allocates under it, so calling it from
// an allocation it made deadlocks. The mapping is looked up once per thread and again whenever
// sp leaves it (the main thread's stack grew, or sp is on a signal or coroutine stack). A glibc
// thread's descriptor (pthread_self) sits at the top of its own stack, right above the frames.
uintptr_t StackTop(ThreadState& t, uintptr_t sp, size_t limit) {
  if (t.stack_top == 0 || sp < t.stack_lo || sp >= t.stack_hi) {
    uintptr_t lo = 0, hi = 0;
    if (!FindMapping(sp, &lo, &hi)) {
      const uintptr_t top = GuessStackTop(sp, limit, &lo, &hi);
      if (hi != 0) {
        t.stack_lo = lo;
        t.stack_hi = hi;
        t.stack_top = top;
      }
      return top;
    }
    t.stack_lo = lo;
    t.stack_hi = hi;
    const uintptr_t self = reinterpret_cast<uintptr_t>(pthread_self());
    t.stack_top = self > sp && self <= hi ? self : hi;  // the main thread's lies elsewhere
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

// A holder keeps the lock for well under a microsecond, or while it waits for room, beating as
// it does. One that shows no progress was killed, cancelled or stopped while it held the lock (a
// process killed by a signal, exit() from another thread, a debugger), and would otherwise keep
// every writer of the run waiting forever: the lock is taken over once its holder's process is
// gone and nothing moved for kDeadHolderNs, or nothing moved for kStaleLockNs whatever the
// process (a cancelled thread, a stopped process; a process in another pid namespace, whose pid
// means nothing here, only gets this).
constexpr uint64_t kDeadHolderNs = 10'000'000;
constexpr uint64_t kStaleLockNs = 1'000'000'000;

// Takes the ring lock for process `pid` (the lock holds the holder's pid).
void Lock(Control& c, uint32_t pid) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  uint32_t epoch = 0, beat = 0;
  uint64_t unchanged_since = 0;
  for (int spins = 0;; ++spins) {
    uint32_t holder = 0;
    if (c.ring_lock.compare_exchange_weak(holder, pid, std::memory_order_acquire, kRelaxed)) break;
    if (spins < 64) continue;
    sched_yield();
    if (spins % 64 != 0 || holder == 0) continue;
    const uint32_t e = c.ring_lock_epoch.load(kRelaxed), b = c.ring_lock_beat.load(kRelaxed);
    const uint64_t now = MonotonicNowNs();
    if (unchanged_since == 0 || e != epoch || b != beat) {
      epoch = e;
      beat = b;
      unchanged_since = now;
      continue;
    }
    const uint64_t stuck = now - unchanged_since;
    const bool gone = stuck > kDeadHolderNs && ::kill(static_cast<pid_t>(holder), 0) != 0 &&
                      errno == ESRCH;
    // A record the holder left half written lies past data_head, which it had not moved yet:
    // the next one overwrites it.
    if ((gone || stuck > kStaleLockNs) &&
        c.ring_lock.compare_exchange_strong(holder, pid, std::memory_order_acquire, kRelaxed)) {
      break;
    }
  }
  c.ring_lock_epoch.store(c.ring_lock_epoch.load(kRelaxed) + 1, kRelaxed);
}
void Unlock(Control& c) { c.ring_lock.store(0, std::memory_order_release); }

void Wake(Control& c) {
  // Read first: once the ring is a quarter full every record calls this, and an exchange on a
  // line the profiler writes would fence and pull that line across CPUs each time.
  if (c.wake_pending.load(std::memory_order_relaxed) != 0) return;
  if (c.wake_pending.exchange(1, std::memory_order_acq_rel) != 0) return;
  // Opened for each wake (at most one per drain), never kept: a program may close descriptors
  // it did not open (a daemon's start-up loop, close_range) and reuse the number for a file of
  // its own, which a kept descriptor would then write to. Read-write: a FIFO written with no
  // reader left raises SIGPIPE, which would kill the program if the profiler died; with a read
  // end of its own the write cannot fail that way (once the pipe is full it returns EAGAIN).
  const int fd = RawOpen(c.wake_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  (void)RawWrite(fd, "w", 1);
  RawClose(fd);
}

// Waits, holding the lock, until `size` bytes are free; false if the reader is gone or too slow.
bool WaitForSpace(Control& c, perf_event_mmap_page* meta, uint64_t head, uint64_t size) {
  const uint64_t data_bytes = c.ring_data_bytes;
  uint64_t waited_since = 0;
  uint64_t checked_at = 0;
  while (data_bytes - (head - __atomic_load_n(&meta->data_tail, __ATOMIC_ACQUIRE)) < size) {
    if (c.reader_gone.load(std::memory_order_relaxed) != 0) return false;
    const uint64_t now = MonotonicNowNs();
    if (waited_since == 0) waited_since = now;
    if (now - waited_since > kMaxWaitNs) return false;
    // A profiler killed outright never sets reader_gone: without this, every later record would
    // wait kMaxWaitNs in vain. EPERM means it exists (a target that changed its user).
    if (now - checked_at > kReaderCheckNs) {
      checked_at = now;
      if (c.reader_pid != 0 && ::kill(static_cast<pid_t>(c.reader_pid), 0) != 0 &&
          errno == ESRCH) {
        c.reader_gone.store(1, std::memory_order_relaxed);
        return false;
      }
    }
    Wake(c);
    c.ring_lock_beat.store(c.ring_lock_beat.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
    RawSleep(50'000);
  }
  return true;
}

// The runs of a delta record's stack (alloc_channel::StackRun), found before the lock is taken.
struct StackDelta {
  static constexpr size_t kMaxRuns = 32;
  alloc_channel::StackRun runs[kMaxRuns];
  size_t count = 0;
  size_t words = 0;     // the runs' words together
  uint32_t sequence = 0;  // 1 for the first delta after a whole record, then 2, ...

  bool Add(size_t word, size_t n) {
    if (count > 0 && runs[count - 1].word + runs[count - 1].words == word) {
      runs[count - 1].words += static_cast<uint32_t>(n);
    } else if (count == kMaxRuns) {
      return false;
    } else {
      runs[count++] = {static_cast<uint32_t>(word), static_cast<uint32_t>(n)};
    }
    words += n;
    return true;
  }
};

// Whether the profiler can rebuild a delta record's stack: it needs the record's tid (whose
// previous copy) and sp (where the copy starts).
bool DeltaPossible(const Control& c) {
  constexpr uint64_t kNeeded = PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  return (c.sample_type & kNeeded) == kNeeded && (c.sample_regs_user >> kRegSp & 1) != 0;
}

// The first i in [i, n) where a[i] != b[i], or n. Most words are equal: eight at a time with
// SSE2 (every x86-64 has it), inline; glibc's memcmp over 128-byte blocks cost a call each, and
// was a third of the record's diffing.
size_t FirstDifference(const uint64_t* a, const uint64_t* b, size_t i, size_t n) {
  const __m128i zero = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8) {
    const auto load = [](const uint64_t* p) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    };
    const __m128i x = _mm_or_si128(
        _mm_or_si128(_mm_xor_si128(load(a + i), load(b + i)),
                     _mm_xor_si128(load(a + i + 2), load(b + i + 2))),
        _mm_or_si128(_mm_xor_si128(load(a + i + 4), load(b + i + 4)),
                     _mm_xor_si128(load(a + i + 6), load(b + i + 6))));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(x, zero)) != 0xffff) break;
  }
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Where the thread's last copy keeps its word for stack address `addr`. The buffer
// (stack_user_bytes) holds the addresses [snap_end - stack_user_bytes, snap_end), where snap_end
// is the end of the copy that last moved it: copies that end at the same place (nearly all of a
// thread's, whose end is its stack hint) share their words' places whatever their sp, so a
// record whose sp moved need not move the copy.
uint64_t* SnapshotWord(const ThreadState& t, const Control& c, uintptr_t addr) {
  return t.last_stack + (addr - (t.snap_end - c.stack_user_bytes)) / 8;
}

// The runs of the `words`-word copy at `sp` that differ from the thread's last copy, or that it
// does not cover; false when sending the copy whole is as small, or there are too many runs.
bool FindDelta(const Control& c, const ThreadState& t, uintptr_t sp, size_t words,
               StackDelta* d) {
  if (t.last_words == 0 || t.last_tid != t.tid || (sp - t.last_sp) % 8 != 0 ||
      t.deltas >= alloc_channel::kMaxDeltas) {
    return false;
  }
  d->sequence = t.deltas + 1;
  const uint64_t* cur = reinterpret_cast<const uint64_t*>(sp);
  const uintptr_t end = sp + words * 8;
  const uintptr_t last_end = t.last_sp + size_t{t.last_words} * 8;
  // The copy's words [k0, k1) lie where the last copy has words too.
  const size_t k0 = t.last_sp > sp ? std::min<size_t>((t.last_sp - sp) / 8, words) : 0;
  const size_t k1 = last_end >= end ? words : last_end > sp ? (last_end - sp) / 8 : 0;
  if (k0 >= k1) return false;
  // a[i] and b[i]: this copy's word k0 + i and the last copy's word at the same address.
  const size_t n = k1 - k0;
  const uint64_t* a = cur + k0;
  const uint64_t* b = SnapshotWord(t, c, sp + k0 * 8);
  if (k0 > 0 && !d->Add(0, k0)) return false;
  for (size_t i = 0; i < n;) {
    i = FirstDifference(a, b, i, n);
    if (i == n) break;
    const size_t start = i++;
    while (i < n) {
      if (a[i] != b[i]) {
        ++i;
      } else if (i + 1 < n && a[i + 1] != b[i + 1]) {
        i += 2;  // one equal word inside a run costs what a new run's header would
      } else {
        break;
      }
    }
    if (!d->Add(k0 + start, i - start)) return false;
  }
  if (k1 < words && !d->Add(k1, words - k1)) return false;
  return alloc_channel::kDeltaHeaderWords + d->count + d->words < words;
}

// Makes the thread's last copy the copy at `sp` that this record sends, as the profiler will
// rebuild it: the words of `delta`'s runs read once from the stack, every other word the last
// copy's (moved to its place in the new copy when sp moved), or, without a delta, the whole
// stack. The record is then encoded from this snapshot, not from the stack, which another thread
// may be writing (a stack-resident atomic or buffer): what the profiler rebuilds and what the
// next delta is computed against stay the same bytes. False (and no base) when the thread keeps
// none.
bool TakeSnapshot(ThreadState& t, const Control& c, uintptr_t sp, size_t stack_bytes,
                  const StackDelta* delta) {
  const size_t last_words = t.last_words;
  t.last_words = 0;  // until the record is published
  if (t.last_stack_released || stack_bytes == 0 || stack_bytes % 8 != 0 || !DeltaPossible(c)) {
    return false;
  }
  if (t.last_stack == nullptr) {
    // Every copy of this process is at most stack_user_bytes long.
    t.last_stack = static_cast<uint64_t*>(__libc_malloc(c.stack_user_bytes));
    if (t.last_stack == nullptr) return false;
  }
  const uint64_t* cur = reinterpret_cast<const uint64_t*>(sp);
  const uintptr_t end = sp + stack_bytes;
  if (delta == nullptr) {
    t.snap_end = end;
    std::memcpy(SnapshotWord(t, c, sp), cur, stack_bytes);
    return true;
  }
  if (end != t.snap_end) {
    // The copy ends elsewhere: the words FindDelta found in both copies, [lo, hi), move to
    // their places for the new end (both places lie in the buffer).
    const uintptr_t lo = std::max<uintptr_t>(sp, t.last_sp);
    const uintptr_t hi = std::min<uintptr_t>(end, t.last_sp + last_words * 8);
    const uint64_t* from = SnapshotWord(t, c, lo);
    t.snap_end = end;
    std::memmove(SnapshotWord(t, c, lo), from, hi - lo);
  }
  uint64_t* at = SnapshotWord(t, c, sp);
  for (size_t i = 0; i < delta->count; ++i) {
    const alloc_channel::StackRun& r = delta->runs[i];
    std::memcpy(at + r.word, cur + r.word, size_t{r.words} * 8);
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
  bool has_regs = false;  // false: no user registers (a free)
  uint64_t bp = 0, sp = 0;  // with ip, the caller's registers; every other one is written as 0
  const uint8_t* stack = nullptr;
  size_t stack_bytes = 0;
  const StackDelta* delta = nullptr;  // set: the stack goes as these runs (kAllocDeltaSampleId)
};

// Counts the bytes a record takes.
class SizeCounter {
 public:
  void Bytes(const void*, size_t n) { size_ += n; }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

// Copies a record straight into the ring at `at` when it does not wrap (nearly always): each
// field is then a fixed-size store instead of a call to memcpy.
class LinearWriter {
 public:
  explicit LinearWriter(uint8_t* at) : at_(at) {}
  void Bytes(const void* p, size_t n) {
    std::memcpy(at_, p, n);
    at_ += n;
  }

 private:
  uint8_t* at_;
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

// Writes a free as an alloc_channel::FreeRecord, an allocation's fields in perf's order for
// c.sample_type (perf_output_sample).
template <typename Out>
void Encode(const Control& c, const SampleFields& f, uint16_t size, Out& out) {
  if (f.id == alloc_channel::kFreeSampleId || f.id == alloc_channel::kPeakMarkSampleId) {
    const uint16_t misc = f.id == alloc_channel::kPeakMarkSampleId
                              ? alloc_channel::kFreeRecordPeak
                          : (f.period & alloc_channel::kFreeTemporary) != 0
                              ? alloc_channel::kFreeRecordTemporary
                              : 0;
    const alloc_channel::FreeRecord r{
        {alloc_channel::kFreeRecordType, misc, size}, f.time_ns, f.pid, f.tid, f.addr};
    out.Bytes(&r, sizeof(r));
    return;
  }
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
    if (!f.has_regs || f.delta != nullptr) {  // a delta carries its three in its stack field
      U64(out, PERF_SAMPLE_REGS_ABI_NONE);
    } else {
      U64(out, PERF_SAMPLE_REGS_ABI_64);
      for (uint64_t rest = c.sample_regs_user; rest != 0; rest &= rest - 1) {
        const int r = __builtin_ctzll(rest);
        U64(out, r == kRegBp ? f.bp : r == kRegSp ? f.sp : r == kRegIp ? f.ip : 0);
      }
    }
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    if (!f.has_regs || f.stack_bytes == 0) {
      U64(out, 0);
    } else if (f.delta != nullptr) {
      const uint64_t data_bytes =
          8 * (alloc_channel::kDeltaHeaderWords + f.delta->count + f.delta->words);
      U64(out, data_bytes);
      U64(out, f.stack_bytes | uint64_t{f.delta->sequence} << 32);
      U64(out, f.bp);
      U64(out, f.sp);
      U64(out, f.ip);
      for (size_t i = 0; i < f.delta->count; ++i) {
        const alloc_channel::StackRun& r = f.delta->runs[i];
        out.Bytes(&r, sizeof(r));
        out.Bytes(f.stack + size_t{r.word} * 8, size_t{r.words} * 8);
      }
      U64(out, data_bytes);
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

// The record's pid and tid, and with `cpu` (a free's record has none) its CPU.
void FillIdentity(ThreadState& t, SampleFields& f, bool cpu) {
  if (t.tid == 0) {
    // A new thread, or a forked child's (ResetForkedThread), whose stack copy is its parent's.
    t.pid = static_cast<uint32_t>(::getpid());
    t.tid = static_cast<uint32_t>(::gettid());
    t.last_words = 0;
  }
  f.pid = t.pid;
  f.tid = t.tid;
  if (!cpu) return;
  const int on = sched_getcpu();
  f.cpu = on < 0 ? 0u : static_cast<uint32_t>(on);
}

// A FreeBatch's frees, taken out of it under the ring lock (so its owner and a process's end,
// which closes every batch of the image, never both take the same ones) and written ahead of a
// record as one FreeRecord.
struct BatchAhead {
  // Not an aggregate: `entries` stays uninitialized (no 256-byte clearing for each record).
  explicit BatchAhead(alloc_channel::FreeBatch* b, bool closing = false) : batch(b), close(closing) {}

  alloc_channel::FreeBatch* batch;
  bool close;  // the process is ending: later frees of its thread go one by one
  uint32_t count = 0;  // taken
  uint64_t entries[alloc_channel::kFreeBatchEntries];

  // Under the lock.
  void Take() {
    if (batch != nullptr) count = alloc_channel::TakeFreeBatch(*batch, close, entries);
  }
  size_t Size() const { return count == 0 ? 0 : offsetof(alloc_channel::FreeRecord, addr) + 8 * count; }
  template <typename Out>
  void Encode(uint64_t time_ns, Out& out) const {
    const perf_event_header h{alloc_channel::kFreeRecordType, alloc_channel::kFreeRecordBatch,
                              static_cast<uint16_t>(Size())};
    out.Bytes(&h, sizeof(h));
    U64(out, time_ns);
    const uint32_t ids[2] = {batch->pid.load(std::memory_order_relaxed),
                             batch->tid.load(std::memory_order_relaxed)};
    out.Bytes(ids, sizeof(ids));
    for (uint32_t i = 0; i < count; ++i) U64(out, entries[i] & ~kEntryWriterBits);
  }
  // The writer's own bits of an entry (ReleaseBatchedBlock's): not the profiler's to see.
  static constexpr uint64_t kEntryWriterBits =
      alloc_channel::kFreeEntryFlagMask & ~alloc_channel::kFreeEntryTemporary;
};
static_assert(alloc_channel::kFreeBatchEntries <= 32, "a batch record's size is a u16");

// Writes the frees `ahead` takes from its batch, then the record `f` (if any), under one lock
// and with one time: false when they could not be (no reader, or no room for too long). The
// caller counts a sample that went unwritten as lost (a peak mark is not a sample). `pid` is the
// writer's. With `resize`, that runs first under the lock, and nothing is written when it fails.
bool Publish(Control& c, SampleFields* f, uint32_t pid, BatchAhead* ahead = nullptr,
             ResizeUnderLock* resize = nullptr) {
  if (c.reader_gone.load(std::memory_order_relaxed) != 0) return false;
  size_t size = 0;
  if (f != nullptr) {
    SizeCounter counter;
    Encode(c, *f, 0, counter);
    size = counter.size();
  }
  perf_event_mmap_page* meta = RingMeta(c);
  uint8_t* data = reinterpret_cast<uint8_t*>(meta) + meta->data_offset;
  Lock(c, pid);
  if (resize != nullptr && !resize->Run()) {
    Unlock(c);
    return false;
  }
  // The profiler stops every writer by setting reader_gone and then taking the lock once, and
  // closes the batches it finds (AllocChannel::StopWriting): a writer that saw it unset above
  // but locked after it must not take a batch's frees again.
  if (c.reader_gone.load(std::memory_order_relaxed) != 0) {
    Unlock(c);
    return false;
  }
  if (ahead != nullptr) ahead->Take();
  const size_t ahead_size = ahead != nullptr ? ahead->Size() : 0;
  const uint64_t head = meta->data_head;  // only writers holding the lock move it
  if (!WaitForSpace(c, meta, head, ahead_size + size)) {
    Unlock(c);
    return false;
  }
  // Taken under the lock, so the ring is in time order across every writer.
  ClockSources clock;
  const uint64_t time_ns = NextRecordTime(c, clock);
  const auto write = [&](auto& writer) {
    if (ahead_size != 0) ahead->Encode(time_ns, writer);
    if (f != nullptr) {
      f->time_ns = time_ns;
      Encode(c, *f, static_cast<uint16_t>(size), writer);
    }
  };
  const uint64_t offset = head & (c.ring_data_bytes - 1);
  if (offset + ahead_size + size <= c.ring_data_bytes) {
    LinearWriter writer(data + offset);
    write(writer);
  } else {
    RingWriter writer(data, c.ring_data_bytes - 1, head);
    write(writer);
  }
  const uint64_t end = head + ahead_size + size;
  __atomic_store_n(&meta->data_head, end, __ATOMIC_RELEASE);
  const uint64_t used = end - __atomic_load_n(&meta->data_tail, __ATOMIC_ACQUIRE);
  Unlock(c);
  if (used >= c.ring_data_bytes / 4) Wake(c);
  return true;
}

// Publish with `batch`'s frees (if any) ahead of `f`. Afterwards, written or not, the blocks of
// the frees it took go back to their allocator, unless `close` (the process is ending);
// unwritten frees are lost samples.
bool PublishAfterBatch(Control& c, SampleFields* f, uint32_t pid, alloc_channel::FreeBatch* batch,
                       bool close = false, ResizeUnderLock* resize = nullptr) {
  BatchAhead ahead(batch, close);
  const bool written = Publish(c, f, pid, &ahead, resize);
  if (ahead.count == 0) return written;
  if (!written) c.lost_samples.fetch_add(ahead.count, std::memory_order_relaxed);
  if (!close) {
    for (uint32_t i = 0; i < ahead.count; ++i) ReleaseBatchedBlock(ahead.entries[i]);
  }
  return written;
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
  SampleFields f;
  f.has_regs = true;
  f.bp = frame[0];
  f.sp = caller_sp;
  // The call instruction, not the one after it: the caller's leaf frame then names the line of
  // the call, and the unwinder looks up the call's CFI row as for any interrupted instruction.
  f.ip = return_address - 1;
  FillIdentity(t, f, /*cpu=*/true);  // first: a new thread's or forked child's copy is dropped
  uintptr_t top = StackTop(t, caller_sp, c.stack_user_bytes);
  // Nothing the unwinder reads lies above the hint; the stack's own end still bounds it (a hint
  // left by an earlier image of this tid, after an exec, may be anywhere).
  if (const uintptr_t high = StackHigh(c, t.tid); high > caller_sp && high < top) top = high;
  size_t stack_bytes = 0;
  if (top > caller_sp) {
    stack_bytes = static_cast<size_t>(std::min<uintptr_t>(top - caller_sp, c.stack_user_bytes));
  }
  StackDelta delta;
  const bool as_delta = stack_bytes % 8 == 0 && DeltaPossible(c) &&
                        FindDelta(c, t, caller_sp, stack_bytes / 8, &delta);
  const bool snapshot = TakeSnapshot(t, c, caller_sp, stack_bytes, as_delta ? &delta : nullptr);
  f.id = as_delta ? alloc_channel::kAllocDeltaSampleId : alloc_channel::kAllocSampleId;
  f.addr = reinterpret_cast<uintptr_t>(user);
  f.period = size;
  f.stack = snapshot ? reinterpret_cast<const uint8_t*>(SnapshotWord(t, c, caller_sp))
                     : reinterpret_cast<const uint8_t*>(caller_sp);
  f.stack_bytes = stack_bytes;
  f.delta = as_delta ? &delta : nullptr;
  // A dropped record leaves the profiler's copy as it was, while the snapshot changed ours:
  // the next record goes whole.
  if (!PublishAfterBatch(c, &f, f.pid, t.batch)) {
    c.lost_samples.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (snapshot) {
    t.last_sp = caller_sp;
    t.last_words = static_cast<uint32_t>(stack_bytes / 8);
    t.last_tid = t.tid;
    t.deltas = as_delta ? delta.sequence : 0;
  }
  return true;
}

void ReleaseStackCopy(ThreadState& t) {
  __libc_free(t.last_stack);
  t.last_stack = nullptr;
  t.last_words = 0;
  t.last_stack_released = true;
}

void WritePeakMark(ThreadState& t, Control& c, int64_t peak_bytes) {
  // Busy: a signal handler's free while its thread is inside the library, which may hold the
  // ring's lock. The mark is left out (the next rise of the peak writes one).
  if (t.busy != 0 || !SampleLayoutSupported(c) ||
      c.reader_gone.load(std::memory_order_relaxed) != 0) {
    return;
  }
  // Called from inside the program's malloc or free: as for a sample, the program's errno stays
  // as it was (the lock and the wake make system calls), and nothing here counts as its own.
  const int saved_errno = errno;
  ++t.busy;
  SampleFields f;
  f.id = alloc_channel::kPeakMarkSampleId;
  f.addr = static_cast<uint64_t>(peak_bytes);
  FillIdentity(t, f, /*cpu=*/false);
  (void)PublishAfterBatch(c, &f, f.pid, t.batch);
  --t.busy;
  errno = saved_errno;
}

void WriteFreeSample(ThreadState& t, Control& c, const void* user, bool temporary) {
  SampleFields f;
  f.id = alloc_channel::kFreeSampleId;
  f.addr = reinterpret_cast<uintptr_t>(user);
  f.period = temporary ? alloc_channel::kFreeTemporary : 0;
  FillIdentity(t, f, /*cpu=*/false);
  if (!PublishAfterBatch(c, &f, f.pid, t.batch)) {
    c.lost_samples.fetch_add(1, std::memory_order_relaxed);
  }
}

void* ResizeWritingFree(ThreadState& t, Control& c, const void* user, bool temporary,
                        ResizeUnderLock& resize) {
  SampleFields f;
  f.id = alloc_channel::kFreeSampleId;
  f.addr = reinterpret_cast<uintptr_t>(user);
  f.period = temporary ? alloc_channel::kFreeTemporary : 0;
  FillIdentity(t, f, /*cpu=*/false);
  const bool written = PublishAfterBatch(c, &f, f.pid, t.batch, /*close=*/false, &resize);
  if (!resize.ran) {
    (void)resize.Run();  // no reader: nothing to keep in order
  } else if (resize.result != nullptr && !written) {
    c.lost_samples.fetch_add(1, std::memory_order_relaxed);
  }
  return resize.result;
}

void FlushFreeBatch(ThreadState& t, Control& c, bool close) {
  if (t.batch == nullptr) return;
  // Busy before the batch is looked at: a signal handler's free meanwhile is written by itself.
  ++t.busy;
  if (close || t.batch->count.load(std::memory_order_relaxed) != 0) {
    // As for a sample: inside the program's free, or its thread's or process's end.
    const int saved_errno = errno;
    SampleFields identity;
    FillIdentity(t, identity, /*cpu=*/false);
    (void)PublishAfterBatch(c, nullptr, identity.pid, t.batch, close);
    errno = saved_errno;
  }
  --t.busy;
}

void CloseLeftBatch(Control& c, alloc_channel::FreeBatch& batch) {
  const int saved_errno = errno;
  (void)PublishAfterBatch(c, nullptr, static_cast<uint32_t>(::getpid()), &batch, /*close=*/true);
  errno = saved_errno;
}

}  // namespace nativeprof::preload
