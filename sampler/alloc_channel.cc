#include "sampler/alloc_channel.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "sampler/proc_maps.h"
#include "sampler/record_sorter.h"

namespace nativeprof::sampler {
namespace {

using alloc_channel::Control;

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

size_t FileBytes(size_t ring_data_bytes) {
  return alloc_channel::RingOffset(PageSize()) + PageSize() + ring_data_bytes;
}

bool RecordClockMayUseTscHere() {
#if defined(__x86_64__)
  absl::StatusOr<std::string> source =
      ReadSmallFile("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  // Only the first processor's entry: the flags are the same on every one.
  absl::StatusOr<std::string> cpuinfo = ReadSmallFile("/proc/cpuinfo");
  return source.ok() && cpuinfo.ok() &&
         RecordClockMayUseTsc(*source, cpuinfo->substr(0, cpuinfo->find("\n\n")));
#else
  return false;
#endif
}

}  // namespace

bool RecordClockMayUseTsc(absl::string_view clocksource, absl::string_view cpuinfo) {
  clocksource = absl::StripAsciiWhitespace(clocksource);
  // "tsc": the kernel keeps it as its clocksource only while it finds it invariant and
  // synchronized across CPUs.
  if (clocksource == "tsc") return true;
  // "kvm-clock" (a VM whose kernel keeps the TSC off as a clocksource, e.g. tsc=unstable): its
  // time is the TSC scaled by the host's parameters, so over the preload's 1 ms between readings
  // an invariant TSC (constant rate, not stopped in idle states) keeps the same rate to it.
  if (clocksource != "kvm-clock") return false;
  bool constant = false, nonstop = false;
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    if (!absl::StartsWith(line, "flags")) continue;
    for (absl::string_view flag : absl::StrSplit(line.substr(line.find(':') + 1), ' ')) {
      constant |= flag == "constant_tsc";
      nonstop |= flag == "nonstop_tsc";
    }
    break;
  }
  return constant && nonstop;
}

void RemoveStaleChannels(const std::string& dir) {
  // "nativeprof-alloc-<pid>-<n>" and its ".wake": left behind when that profiler was killed
  // outright. Only a pid that no longer exists marks them stale; a live one may be any
  // process (pids are reused), so its files stay.
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  constexpr absl::string_view kPrefix = "nativeprof-alloc-";
  while (const dirent* e = ::readdir(d)) {
    absl::string_view name(e->d_name);
    if (!absl::ConsumePrefix(&name, kPrefix)) continue;
    const size_t dash = name.find('-');
    int pid = 0;
    if (dash == absl::string_view::npos || !absl::SimpleAtoi(name.substr(0, dash), &pid) ||
        pid <= 0) {
      continue;
    }
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      (void)::unlinkat(::dirfd(d), e->d_name, 0);
    }
  }
  ::closedir(d);
}

absl::StatusOr<AllocChannel> AllocChannel::Create(const std::string& dir, uint64_t rate_bytes,
                                                  size_t ring_data_bytes) {
  if (ring_data_bytes == 0 || (ring_data_bytes & (ring_data_bytes - 1)) != 0) {
    return absl::InvalidArgumentError("the allocation ring size must be a power of two");
  }
  static std::atomic<int> counter{0};
  RemoveStaleChannels(dir);
  AllocChannel ch;
  const std::string stem = absl::StrCat(dir, "/nativeprof-alloc-", ::getpid(), "-",
                                        counter.fetch_add(1, std::memory_order_relaxed));
  const std::string path = stem;
  const std::string fifo_path = absl::StrCat(stem, ".wake");
  if (fifo_path.size() >= sizeof(Control::wake_path)) {
    return absl::InvalidArgumentError(absl::StrCat("path too long for the allocation channel: ",
                                                   fifo_path));
  }
  // Each path is owned (and removed by the destructor, on every error below too) only once this
  // call created it: a name that already existed is someone else's file.
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return ErrnoError(absl::StrCat("cannot create ", path));
  ch.path_ = path;
  const size_t bytes = FileBytes(ring_data_bytes);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return ErrnoError(absl::StrCat("cannot size ", path));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) return ErrnoError(absl::StrCat("cannot map ", path));
  ch.map_ = ScopedMmap(base, bytes);
  if (::mkfifo(fifo_path.c_str(), 0600) != 0) {
    return ErrnoError(absl::StrCat("cannot create ", fifo_path));
  }
  ch.fifo_path_ = fifo_path;
  // Read end, non-blocking, so opening needs no writer; the preload opens the write end.
  ch.fifo_ = ScopedFd(::open(fifo_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!ch.fifo_.valid()) return ErrnoError(absl::StrCat("cannot open ", fifo_path));
  // A FIFO whose last writer closed polls POLLHUP for good; holding a write end ourselves keeps
  // it quiet between the preload's processes.
  ch.fifo_writer_ = ScopedFd(::open(fifo_path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!ch.fifo_writer_.valid()) return ErrnoError(absl::StrCat("cannot open ", fifo_path));

  // The file is zero-filled, every field's initial value: only the fixed fields need values.
  // Constructing a Control would write its 760 KiB of zeros again, faulting in every page of
  // thread slots that no thread may ever claim (a millisecond of every run's start). The magic is
  // written last (by Configure), so a preload that maps the file early sees no channel rather
  // than half of one.
  Control* c = std::launder(reinterpret_cast<Control*>(base));
  c->rate_bytes = rate_bytes == 0 ? 1 : rate_bytes;
  c->ring_offset = alloc_channel::RingOffset(PageSize());
  c->ring_data_bytes = ring_data_bytes;
  std::memcpy(c->wake_path, fifo_path.c_str(), fifo_path.size() + 1);
  c->reader_pid = static_cast<uint32_t>(::getpid());
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(static_cast<char*>(base) + c->ring_offset);
  meta->data_offset = PageSize();
  meta->data_size = ring_data_bytes;
  return ch;
}

AllocChannel::AllocChannel(AllocChannel&& other) noexcept
    : path_(std::move(other.path_)),
      fifo_path_(std::move(other.fifo_path_)),
      map_(std::move(other.map_)),
      fifo_(std::move(other.fifo_)),
      fifo_writer_(std::move(other.fifo_writer_)),
      series_(std::move(other.series_)),
      series_interval_ns_(other.series_interval_ns_) {
  other.path_.clear();
  other.fifo_path_.clear();
}

AllocChannel::~AllocChannel() {
  if (!path_.empty()) ::unlink(path_.c_str());
  if (!fifo_path_.empty()) ::unlink(fifo_path_.c_str());
}

void AllocChannel::Configure(const perf_event_attr& attr) {
  Control* c = control();
  c->sample_type = attr.sample_type;
  c->sample_regs_user = attr.sample_regs_user;
  c->stack_user_bytes = attr.sample_stack_user;
  // The preload stamps records with CLOCK_MONOTONIC, read or extrapolated from the TSC.
  c->tsc_clock = RecordClockMayUseTscHere() ? 1 : 0;
  c->version = alloc_channel::kVersion;
  std::atomic_thread_fence(std::memory_order_release);
  c->magic = alloc_channel::kMagic;
}

RingBuffer AllocChannel::Ring() const {
  Control* c = control();
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(reinterpret_cast<char*>(c) + c->ring_offset);
  RingBuffer ring(meta, reinterpret_cast<uint8_t*>(meta) + meta->data_offset,
                  c->ring_data_bytes);
  ring.set_writers_wait(true);  // the preload waits up to 2 s for room before it drops a sample
  return ring;
}

void AllocChannel::AfterDrain(bool last) {
  char buf[64];
  while (::read(fifo_.get(), buf, sizeof(buf)) > 0) {
  }
  control()->wake_pending.store(0, std::memory_order_release);

  const uint64_t now = MonotonicNowNs();
  if (!last && !series_.empty() && now < series_.back().first + series_interval_ns_) return;
  const int64_t live = control()->live_bytes.load(std::memory_order_relaxed);
  const uint64_t live_bytes = live > 0 ? static_cast<uint64_t>(live) : 0;
  if (last && !series_.empty() && now < series_.back().first + series_interval_ns_) {
    series_.back() = {now, live_bytes};  // the end replaces a point too close before it
    return;
  }
  if (series_.size() >= kMaxPoints) {
    size_t kept = 0;
    for (size_t i = 0; i < series_.size(); i += 2) series_[kept++] = series_[i];
    series_.resize(kept);
    series_interval_ns_ *= 2;
  }
  series_.emplace_back(now, live_bytes);
}

std::vector<BatchedFree> AllocChannel::OnProcessExited(uint32_t pid) {
  Control* c = control();
  const int slot = alloc_channel::FindPidSlot(*c, pid);
  if (slot < 0 || c->pid_ended[slot].load(std::memory_order_acquire) != 0) return {};
  // Still running (a main thread that ended before the others), or already a new process with
  // this pid, which took the old one's heap out as it registered.
  if (!ProcessHasEnded(static_cast<pid_t>(pid))) return {};
  alloc_channel::EndPidSlot(*c, static_cast<size_t>(slot));
  // None of its threads runs: closing their batches races only other closers (a later process
  // with this pid, which closes what an exec'd image left), and of those only one gets them.
  return CloseBatches([pid](const alloc_channel::FreeBatch& b) {
    return b.pid.load(std::memory_order_relaxed) == pid;
  });
}

template <typename Pred>
std::vector<BatchedFree> AllocChannel::CloseBatches(Pred pred) {
  Control* c = control();
  std::vector<BatchedFree> out;
  if (c->rate_bytes > 1) return out;  // batches are --alloc=1's
  const uint32_t claimed = alloc_channel::ClaimedSlots(*c);
  uint64_t entries[alloc_channel::kFreeBatchEntries];
  for (uint32_t i = 0; i < claimed; ++i) {
    alloc_channel::FreeBatch& b = c->free_batches[i];
    if (!pred(b)) continue;
    const uint32_t n = alloc_channel::TakeFreeBatch(b, /*close=*/true, entries);
    const uint32_t pid = b.pid.load(std::memory_order_relaxed);
    for (uint32_t k = 0; k < n; ++k) {
      out.push_back({pid, entries[k] & ~alloc_channel::kFreeEntryFlagMask,
                     (entries[k] & alloc_channel::kFreeEntryTemporary) != 0});
    }
  }
  return out;
}

std::vector<BatchedFree> AllocChannel::StopWriting() {
  Control* c = control();
  c->reader_gone.store(1, std::memory_order_relaxed);
  // Once the lock was taken after reader_gone was set, no writer takes a batch's frees any more
  // (it looks again under the lock): the batches are then the profiler's to close. A writer that
  // holds it finishes its record within microseconds (one waiting for room gives up on
  // reader_gone). One whose process is gone was killed holding it: the lock is taken over, as
  // writers do, and a batch it was taking keeps it or loses it whole (TakeFreeBatch). One
  // stopped holding it (a debugger) may still go on: its batches are left alone.
  const uint32_t self = static_cast<uint32_t>(::getpid());
  const auto deadline = std::chrono::steady_clock::now() + kStopWaitLimit;
  for (int spins = 1;; ++spins) {
    uint32_t holder = 0;
    if (c->ring_lock.compare_exchange_weak(holder, self, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
      break;
    }
    if (spins % 64 != 0) continue;
    if (holder != 0 && ::kill(static_cast<pid_t>(holder), 0) != 0 && errno == ESRCH &&
        c->ring_lock.compare_exchange_strong(holder, self, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) return {};
    ::sched_yield();
  }
  std::vector<BatchedFree> out = CloseBatches([](const alloc_channel::FreeBatch&) { return true; });
  c->ring_lock.store(0, std::memory_order_release);
  return out;
}

void AllocChannel::SetStackHint(uint32_t tid, uint64_t stack_high) {
  if (tid == 0) return;
  Control* c = control();
  for (size_t probe = 0; probe < alloc_channel::kHintProbes; ++probe) {
    alloc_channel::StackHint& h = c->hints[alloc_channel::HintSlot(tid, probe)];
    const uint32_t owner = h.tid.load(std::memory_order_relaxed);
    if (owner == tid) {
      if (h.stack_high.load(std::memory_order_relaxed) != stack_high) {
        h.stack_high.store(stack_high, std::memory_order_relaxed);
      }
      return;
    }
    if (owner == 0) {
      if (stack_high == 0) return;  // nothing to forget
      h.stack_high.store(stack_high, std::memory_order_relaxed);
      h.tid.store(tid, std::memory_order_release);
      return;
    }
  }
  // Every probed slot belongs to another thread: this one's samples keep full copies.
}

AllocTotals AllocChannel::Totals() const {
  const Control* c = control();
  AllocTotals t;
  auto add = [&t](const alloc_channel::ThreadSlot& s) {
    t.alloc_calls += s.alloc_calls.load(std::memory_order_relaxed);
    t.alloc_bytes += s.alloc_bytes.load(std::memory_order_relaxed);
    t.free_calls += s.free_calls.load(std::memory_order_relaxed);
    t.freed_bytes += s.freed_bytes.load(std::memory_order_relaxed);
    t.temporary += s.temporary.load(std::memory_order_relaxed);
    t.sampled += s.sampled.load(std::memory_order_relaxed);
    t.inherited_frees += s.inherited_frees.load(std::memory_order_relaxed);
    t.inherited_freed_bytes += s.inherited_freed_bytes.load(std::memory_order_relaxed);
  };
  const uint32_t claimed = alloc_channel::ClaimedSlots(*c);
  for (uint32_t i = 0; i < claimed; ++i) add(c->slots[i]);
  add(c->overflow);
  t.lost_samples = c->lost_samples.load(std::memory_order_relaxed);
  t.processes = c->processes.load(std::memory_order_relaxed);
  const int64_t peak = c->peak_bytes.load(std::memory_order_relaxed);
  t.peak_bytes = peak > 0 ? static_cast<uint64_t>(peak) : 0;
  // The threads publish the live heap in steps (up to 4 KiB each); a process killed by a signal
  // leaves its last step unpublished. With one process, what its last image holds now (exact,
  // but for what the images it exec'd from left) was live at once, so the peak is at least that.
  if (t.processes == 1) {
    const int64_t left = c->exec_left_bytes.load(std::memory_order_relaxed);
    const uint64_t held = t.live_bytes();
    const uint64_t now = left <= 0 ? held : held > uint64_t(left) ? held - uint64_t(left) : 0;
    t.peak_bytes = std::max(t.peak_bytes, now);
  }
  return t;
}

std::vector<ProcessHeap> AllocChannel::ProcessHeaps() const {
  const Control* c = control();
  std::vector<ProcessHeap> out;
  for (size_t i = 0; i < alloc_channel::kPidSlots; ++i) {
    const uint32_t pid = c->pids[i].load(std::memory_order_relaxed);
    if (pid == 0) continue;
    const int64_t peak = c->pid_peak[i].load(std::memory_order_relaxed);
    out.push_back({pid, peak > 0 ? static_cast<uint64_t>(peak) : 0,
                   c->pid_live[i].load(std::memory_order_relaxed),
                   c->pid_malloc_elsewhere[i].load(std::memory_order_relaxed) != 0});
  }
  std::sort(out.begin(), out.end(), [](const ProcessHeap& a, const ProcessHeap& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes > b.peak_bytes : a.pid < b.pid;
  });
  return out;
}

std::optional<bool> AllocChannel::ImageAttached(uint32_t pid, uint64_t exec_ns) const {
  const Control* c = control();
  const int slot = alloc_channel::FindPidSlot(*c, pid);
  if (slot >= 0) return c->pid_attach_ns[slot].load(std::memory_order_relaxed) > exec_ns;
  // Registration fills the first empty slot from pid % kPidSlots: with none left, a pid may
  // have attached and found no room.
  for (size_t i = 0; i < alloc_channel::kPidSlots; ++i) {
    if (c->pids[i].load(std::memory_order_relaxed) == 0) return false;
  }
  return std::nullopt;
}

}  // namespace nativeprof::sampler
