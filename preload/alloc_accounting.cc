#include "preload/alloc_accounting.h"
#include "preload/alloc_sample_writer.h"
#include "preload/allocator_backend.h"
#include "preload/negative_log.h"
#include "preload/record_clock.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <new>
#include <utility>

namespace nativeprof::preload {

namespace {
ProcessPage g_static_page{};
}  // namespace

namespace internal {
ProcessPage* g_process = &g_static_page;
__thread ThreadState t_state __attribute__((tls_model("initial-exec")));
}  // namespace internal

namespace {

using alloc_channel::Control;
using alloc_channel::ThreadSlot;
// 0: not attached yet, 3: attaching, 1: attached (g_attached set), 2: not profiling.
std::atomic<int> g_attach_state{0};
// The channel attached to, kept where a forked child inherits it.
Control* g_attached = nullptr;

pthread_key_t g_thread_key;
bool g_thread_key_ok = false;

// This process's index in the channel's pid table (pid_live, pid_peak); -1 when it has none.
// Set when the process attaches and again in a forked child, before either allocates.
int g_pid_slot = -1;

// The image's malloc is not the library's (MallocIsElsewhere), as its constructor found.
bool g_malloc_elsewhere = false;

// Writes and closes the batched frees of process `pid`'s threads that `left` says their threads
// will not write (alloc_channel::FreeBatch): before any record of the image that calls this.
// Scans every claimed slot (up to kThreadSlots), only under --alloc=1.
template <typename Pred>
void CloseLeftBatches(Control& c, uint32_t pid, Pred left) {
  if (c.rate_bytes > 1) return;  // batches are --alloc=1's
  ThreadState& t = CurrentThread();
  ++t.busy;  // inside the library: a signal handler's free meanwhile is written by itself
  const uint32_t claimed = alloc_channel::ClaimedSlots(c);
  for (uint32_t i = 0; i < claimed; ++i) {
    alloc_channel::FreeBatch& b = c.free_batches[i];
    if (b.pid.load(std::memory_order_relaxed) != pid) continue;
    const uint32_t state = b.count.load(std::memory_order_acquire);
    if (state != 0 && (state & alloc_channel::kFreeBatchClosed) == 0 && left(b)) {
      CloseLeftBatch(c, b);
    }
  }
  --t.busy;
}

// Counts the process image in the channel and gives it its tag (in `page`, which the caller
// then makes the process's).
void RegisterProcess(Control& c, ProcessPage& page) {
  const uint32_t pid = static_cast<uint32_t>(::getpid());
  const uint64_t now_ns = MonotonicNowNs();
  const uint32_t image = c.images.fetch_add(1, std::memory_order_relaxed) + 1;
  page.not_own_tag = ~(kTagMagic | (image & 0xffffu) << kTagImageShift);
  page.pid = pid;
  page.image = image;
  g_pid_slot = -1;
  // The slot is this image's: when it attached, and whose malloc it calls.
  const auto take_slot = [&c, now_ns](size_t index) {
    g_pid_slot = static_cast<int>(index);
    c.pid_attach_ns[index].store(now_ns, std::memory_order_relaxed);
    c.pid_malloc_elsewhere[index].store(g_malloc_elsewhere ? 1 : 0, std::memory_order_relaxed);
  };
  for (size_t i = 0; i < alloc_channel::kPidSlots; ++i) {
    const size_t index = (pid + i) % alloc_channel::kPidSlots;
    std::atomic<uint32_t>& slot = c.pids[index];
    uint32_t seen = slot.load(std::memory_order_relaxed);
    if (seen == 0 && slot.compare_exchange_strong(seen, pid, std::memory_order_relaxed)) {
      take_slot(index);
      break;
    }
    if (seen == pid) {  // an exec'd image of a process already counted
      take_slot(index);
      // The previous image's heap went with it: it stays in the leaked totals (never freed) but
      // leaves the live heap, so the peak from now on does not count it. Its threads' changes
      // not yet published (up to kFlushBytes each) were never added. An earlier process with
      // this pid that ended (pids wrap) took its heap out itself.
      const bool ended = c.pid_ended[index].exchange(0, std::memory_order_acq_rel) != 0;
      const int64_t gone = c.pid_live[index].exchange(0, std::memory_order_relaxed);
      if (!ended) c.live_bytes.fetch_sub(gone, std::memory_order_relaxed);
      c.exec_left_bytes.fetch_add(gone, std::memory_order_relaxed);
      // An exec, not a later process with the same pid (pids wrap): the old image's threads
      // left their batches.
      if (!ended) {
        CloseLeftBatches(c, pid, [image](const alloc_channel::FreeBatch& b) {
          return b.image.load(std::memory_order_relaxed) != image;
        });
      }
      return;
    }
  }
  c.processes.fetch_add(1, std::memory_order_relaxed);
}

// Adds `delta` to a live heap whose peak is `peak`; `high` is the most the delta reached on
// the way (exact when no other thread changed `live` in between). Returns the new peak when
// this raised it, else 0.
int64_t AddLive(std::atomic<int64_t>& live, std::atomic<int64_t>& peak, int64_t delta,
                int64_t high) {
  const int64_t reached = live.fetch_add(delta, std::memory_order_relaxed) + high;
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (reached > seen) {
    if (peak.compare_exchange_weak(seen, reached, std::memory_order_relaxed)) return reached;
  }
  return 0;
}

Control* Attach() {
  // getenv allocates nothing, and environ is set before the process's first allocation.
  const char* path = std::getenv(alloc_channel::kEnvChannel);
  if (path == nullptr || *path == '\0') return nullptr;
  const int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* base = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(Control)) {
    base = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                  0);
  }
  ::close(fd);
  if (base == MAP_FAILED) return nullptr;
  Control* c = static_cast<Control*>(base);
  if (c->magic != alloc_channel::kMagic || c->version != alloc_channel::kVersion) {
    ::munmap(base, static_cast<size_t>(st.st_size));
    return nullptr;
  }
  // An image exec'd by a thread that forbade itself the TSC may still have it forbidden (the
  // prctl hook only sees the calls made in this image).
  int tsc = 0;
  if (::syscall(SYS_prctl, PR_GET_TSC, &tsc, 0, 0, 0) == 0 && tsc == PR_TSC_SIGSEGV) {
    g_tsc_forbidden.store(true, std::memory_order_relaxed);
  }
  return c;
}

// The process's page (ProcessPage): one that a forked child gets blank, or where the kernel
// cannot do that (before 4.14), the static one, and only the atfork handler tells a child.
ProcessPage* NewProcessPage() {
  constexpr size_t kPage = 4096;
  void* p = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return &g_static_page;
  if (::madvise(p, kPage, MADV_WIPEONFORK) != 0) {
    ::munmap(p, kPage);
    return &g_static_page;
  }
  return new (p) ProcessPage{};
}

}  // namespace

void internal::ClaimSlot(ThreadState& t, Control& c) {
  const uint32_t i = c.slots_claimed.fetch_add(1, std::memory_order_relaxed);
  t.slot = i < alloc_channel::kThreadSlots ? &c.slots[i] : nullptr;
  t.claimed = true;
  t.batch = nullptr;
  // Not on the static page (a kernel without MADV_WIPEONFORK): a child forked without the
  // atfork handlers would go on appending to its parent's batch, whose blocks the parent frees.
  if (t.slot != nullptr && c.rate_bytes <= 1 && SampleLayoutSupported(c) &&
      internal::g_process != &g_static_page) {
    alloc_channel::FreeBatch& b = c.free_batches[i];
    b.count.store(0, std::memory_order_relaxed);
    b.pid.store(internal::g_process->pid, std::memory_order_relaxed);
    b.tid.store(static_cast<uint32_t>(::gettid()), std::memory_order_relaxed);
    b.image.store(internal::g_process->image, std::memory_order_relaxed);
    t.batch = &b;
    internal::g_process->batch_threads.fetch_add(1, std::memory_order_relaxed);
  }
  // The key's destructor publishes the thread's pending live-heap change when it exits.
  if (g_thread_key_ok) {
    ++t.busy;  // pthread_setspecific may allocate its second-level array
    (void)pthread_setspecific(g_thread_key, &t);
    --t.busy;
  }
}

namespace {

uint64_t NextRandom(ThreadState& t) {
  if (t.rng == 0) {
    // MonotonicNowNs, not clock_gettime: it knows when the TSC is forbidden.
    t.rng = (MonotonicNowNs() ^ (reinterpret_cast<uintptr_t>(&t) << 16) ^
             static_cast<uint64_t>(::gettid())) | 1;
  }
  // xorshift64*
  t.rng ^= t.rng >> 12;
  t.rng ^= t.rng << 25;
  t.rng ^= t.rng >> 27;
  return t.rng * 0x2545F4914F6CDD1Dull;
}

// Bytes until the next sample: exponentially distributed with mean `rate`, which makes sampling a
// Poisson process over allocated bytes (each byte is sampled with probability 1/rate, whatever
// the sizes around it), the scheme tcmalloc's heap profiler uses.
int64_t NextSampleDistance(ThreadState& t, uint64_t rate) {
  // 53 random bits in (0, 1].
  const double u = (static_cast<double>(NextRandom(t) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  const double d = NegativeLog(u) * static_cast<double>(rate);
  return d >= 9.0e18 ? INT64_MAX : static_cast<int64_t>(d) + 1;
}

void ThreadExit(void* arg) {
  ThreadState* t = static_cast<ThreadState*>(arg);
  if (t == nullptr) return;
  if (Control* c = Channel(); c != nullptr) {
    FlushLive(*t, *c);
    FlushFreeBatch(*t, *c);
  }
  if (t->batch != nullptr) {
    internal::g_process->batch_threads.fetch_sub(1, std::memory_order_relaxed);
    t->batch = nullptr;  // a TLS destructor's frees after this go one by one
  }
  ReleaseStackCopy(*t);
}

void BeforeFork() {
  PublishThisThread();
  // The child's copy of the batch's blocks would never be given back.
  ThreadState& t = CurrentThread();
  if (Control* c = Channel(); c != nullptr && t.busy == 0) FlushFreeBatch(t, *c);
}

// A forked child shares the channel with its parent but not its slots: its copy of the thread
// that forked must count into a slot of its own, and its records carry its own ids.
void ResetForkedThread(ThreadState& t) {
  t.slot = nullptr;
  t.claimed = false;
  t.pending_live = 0;
  t.pending_high = 0;
  t.pid = 0;
  t.tid = 0;
  t.batch = nullptr;  // its parent's, in the channel
}

// Registers a forked child: at its first call into the library when its page came blank, or in
// the atfork handler, whichever comes first (another library's child handler may allocate
// before this one runs). A fork leaves one thread: no other can be here.
Control* AdoptForkedChild() {
  static bool adopting = false;
  Control* c = g_attached;
  // A signal handler's allocation while this registers is forwarded uncounted, not registered
  // a second time.
  if (c == nullptr || adopting) return nullptr;
  adopting = true;
  ProcessPage& page = *internal::g_process;
  ResetForkedThread(CurrentThread());
  RegisterProcess(*c, page);
  page.channel.store(c, std::memory_order_release);
  adopting = false;
  return c;
}

void InChildAfterFork() {
  // Registered already (a call before this handler found the page blank) when the page names
  // this process; not when the page is the static one, or the kernel ignored MADV_WIPEONFORK
  // (qemu-user accepts it and does nothing), which leave the parent's there.
  const ProcessPage& page = *internal::g_process;
  if (page.channel.load(std::memory_order_acquire) != nullptr &&
      page.pid == static_cast<uint32_t>(::getpid())) {
    return;
  }
  if (AdoptForkedChild() == nullptr) ResetForkedThread(CurrentThread());
}

// libstdc++ allocates its exception-handling emergency pool at start-up and keeps it until exit;
// releasing it here, as heaptrack and valgrind do, keeps it out of the leaks. Nothing can throw
// this late in the exit.
__attribute__((destructor)) void FiniPreload() {
  // The exiting thread's unpublished change (and the highest it reached) goes in first.
  PublishThisThread();
  ThreadState& t = CurrentThread();
  ++t.busy;
  using Fn = void (*)();
  Fn freeres = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv"));
  --t.busy;
  if (freeres != nullptr) freeres();
  // Last: a forked child's exit (a shell's, a build's) must not leave its heap in the peak of
  // the processes that outlive it. Destructors that run after this one count for this process
  // alone.
  EndThisProcess();
}

__attribute__((constructor)) void InitPreload() {
  ThreadState& t = CurrentThread();
  ++t.busy;  // both may allocate
  g_thread_key_ok = pthread_key_create(&g_thread_key, ThreadExit) == 0;
  (void)pthread_atfork(BeforeFork, nullptr, InChildAfterFork);
  --t.busy;
  Control* c = Channel();
  if (c == nullptr) return;
  g_malloc_elsewhere = MallocIsElsewhere();
  if (g_pid_slot >= 0) {
    c->pid_malloc_elsewhere[g_pid_slot].store(g_malloc_elsewhere ? 1 : 0,
                                              std::memory_order_relaxed);
  }
}

}  // namespace

Control* internal::AttachOnce() {
  const int state = g_attach_state.load(std::memory_order_acquire);
  // Attached, yet this process's page holds no channel: a child forked without the handlers.
  if (state == 1) return AdoptForkedChild();
  // Not being profiled (or another thread is attaching): no locked instruction on every call.
  if (state != 0) return nullptr;
  // The first allocation of the process happens before it can start a thread, so there is no
  // race to attach; the compare-exchange only keeps a second attach from happening.
  int expected = 0;
  if (!g_attach_state.compare_exchange_strong(expected, 3, std::memory_order_acq_rel)) {
    return nullptr;
  }
  const int saved_errno = errno;  // open and mmap must not show in the program's errno
  Control* c = Attach();
  if (c != nullptr) {
    ProcessPage* page = NewProcessPage();
    RegisterProcess(*c, *page);
    page->channel.store(c, std::memory_order_release);
    g_attached = c;
    internal::g_process = page;
  }
  errno = saved_errno;
  g_attach_state.store(c != nullptr ? 1 : 2, std::memory_order_release);
  return c;
}

bool internal::SampleDue(ThreadState& t, const Control& c) {
  const uint64_t rate = c.rate_bytes;
  if (rate <= 1) return true;
  if (!t.sampling_started) {
    // The thread's first allocation: its distance to the first sample is drawn now.
    t.sampling_started = true;
    t.until_sample += NextSampleDistance(t, rate);
    if (t.until_sample > 0) return false;
  }
  // One allocation is sampled at most once however many sample points it spans; its weight
  // (size / probability, in the profiler) accounts for the rest.
  t.until_sample = NextSampleDistance(t, rate);
  return true;
}

// Moves what a thread past kThreadSlots counted in this call into the shared overflow slot.
void internal::MergeSpill(ThreadState& t, Control& c) {
  for (auto [shared, own] : {std::pair{&c.overflow.alloc_calls, &t.spill.alloc_calls},
                             std::pair{&c.overflow.alloc_bytes, &t.spill.alloc_bytes},
                             std::pair{&c.overflow.free_calls, &t.spill.free_calls},
                             std::pair{&c.overflow.freed_bytes, &t.spill.freed_bytes},
                             std::pair{&c.overflow.temporary, &t.spill.temporary},
                             std::pair{&c.overflow.sampled, &t.spill.sampled},
                             std::pair{&c.overflow.inherited_frees, &t.spill.inherited_frees},
                             std::pair{&c.overflow.inherited_freed_bytes,
                                       &t.spill.inherited_freed_bytes}}) {
    if (const uint64_t n = own->load(std::memory_order_relaxed); n != 0) {
      shared->fetch_add(n, std::memory_order_relaxed);
      own->store(0, std::memory_order_relaxed);
    }
  }
}

void PublishThisThread() {
  ThreadState& t = CurrentThread();
  // busy: a signal handler's _exit interrupted this thread inside the preload, halfway through
  // changing what it would publish.
  if (t.busy != 0 || !t.claimed) return;
  if (Control* c = Channel(); c != nullptr) FlushLive(t, *c);
}

void EndThisProcess() {
  PublishThisThread();
  Control* c = Channel();
  ThreadState& t = CurrentThread();
  // Not from a signal handler that interrupted the library, which may hold the ring lock.
  if (c != nullptr && t.busy == 0) {
    // The calling thread's batch, then the other threads' of this image, which die with it;
    // closed, so the frees of destructors that run after this, and of threads still running,
    // are written one by one.
    // A vfork child (it shares its parent's memory, and this thread's batch) only writes it.
    const ProcessPage& page = *internal::g_process;
    const bool own_page = page.pid == static_cast<uint32_t>(::getpid());
    FlushFreeBatch(t, *c, /*close=*/own_page);
    const bool others = page.batch_threads.load(std::memory_order_relaxed) > (t.batch ? 1u : 0u);
    if (own_page && others) {
      CloseLeftBatches(*c, page.pid, [&page](const alloc_channel::FreeBatch& b) {
        return b.image.load(std::memory_order_relaxed) == page.image;
      });
    }
  }
  if (c == nullptr || g_pid_slot < 0) return;  // without a pid slot its heap is not known apart
  // Not a child that shares or copied this memory without registering (vfork, a raw clone):
  // the slot is its parent's, which goes on.
  if (c->pids[g_pid_slot].load(std::memory_order_relaxed) != static_cast<uint32_t>(::getpid())) {
    return;
  }
  alloc_channel::EndPidSlot(*c, static_cast<size_t>(g_pid_slot));
}

void EndReapedProcess(pid_t pid) {
  Control* c = Channel();
  if (c == nullptr || pid <= 0) return;
  // Not from a signal handler that interrupted the library, which may hold the ring lock: the
  // profiler ends the process at its exit record instead, batches and all
  // (AllocChannel::OnProcessExited), which it does only for a slot not ended yet.
  if (CurrentThread().busy != 0) return;
  const int slot = alloc_channel::FindPidSlot(*c, static_cast<uint32_t>(pid));
  // None: it never attached (a static binary, a vfork child that did not exec).
  if (slot < 0 || !alloc_channel::EndPidSlot(*c, static_cast<size_t>(slot))) return;
  CloseLeftBatches(*c, static_cast<uint32_t>(pid),
                   [](const alloc_channel::FreeBatch&) { return true; });
}

void FlushLive(ThreadState& t, Control& c) {
  if (t.pending_live == 0 && t.pending_high == 0) return;
  if (g_pid_slot < 0 || c.pid_ended[g_pid_slot].load(std::memory_order_acquire) == 0) {
    if (const int64_t peak = AddLive(c.live_bytes, c.peak_bytes, t.pending_live, t.pending_high);
        peak != 0 && c.rate_bytes > 1) {
      // One writer per step: whoever moves the mark writes it.
      int64_t marked = c.peak_marked_bytes.load(std::memory_order_relaxed);
      while (peak - marked > marked / alloc_channel::kPeakMarkStep) {
        if (c.peak_marked_bytes.compare_exchange_weak(marked, peak, std::memory_order_relaxed)) {
          WritePeakMark(t, c, peak);
          break;
        }
      }
    }
  }
  if (g_pid_slot >= 0) {
    AddLive(c.pid_live[g_pid_slot], c.pid_peak[g_pid_slot], t.pending_live, t.pending_high);
  }
  t.pending_live = 0;
  t.pending_high = 0;
}

}  // namespace nativeprof::preload
