// Ground truth for the allocation profiler: every allocation site is a noinline function of its
// own, so an allocation's callchain names its site, and the counts and bytes below hold by
// construction. No stdio anywhere: stdout's buffer would be a malloc the test did not construct.
//
// Mode `sites` (the default; also what `exit N` and each half of `forkexec` run), in this order:
//   leak_blocks        10 x malloc(1000), never freed                        10,000 B
//   small_temporaries  1,310,720 x { malloc(16); free }                 20,971,520 B (10 %)
//   medium_live_set    15,360 x malloc(4096) all live, then all freed   62,914,560 B (30 %)
//   big_pairs          60 x { a = malloc(1 MiB); b = malloc(1 MiB);
//                             free(a); free(b) }                       125,829,120 B (60 %)
//   allocation calls 1,326,210   bytes 209,725,200   frees 1,326,200
//   temporary 1,310,720: the small ones. heaptrack's rule: freed with nothing else allocated or
//   freed in between, which leaves out each pair's b (a is freed first)
//   peak 62,924,560 B (the leak plus the medium live set)   leaked 10,000 B in 10 blocks
//
// Mode `threads N` (default 4, at most 64): each of N threads does 200,000 x { malloc(64); free }
// and then keeps 1,000 x malloc(256), which the main thread frees after joining.
//   allocation calls N x 201,000 (N=4: 804,000)   bytes N x 13,056,000 (N=4: 52,224,000)
//   frees N x 201,000   temporary N x 200,000 per thread (N=4: 800,000)
//   peak N x 256,000 B (N=4: 1,024,000; every thread keeps its blocks only after its temporaries)
//   leaked 0 by construction. pthread_create also callocs each thread's DTV (320 B under
//   heaptrack; the size depends on the loaded TLS modules), which glibc keeps with the cached
//   stack after the thread exits: N more calls that stay live to the end.
//
// Mode `forkexec`: the child execs `/proc/self/exe sites` while the parent runs `sites` too, so
// the totals over both processes are exactly twice `sites`; exits 0 if the child exited 0.
// (heaptrack traces only the parent.)
//
// Mode `execs N`: runs `sites`, then execs `/proc/self/exe execs N-1`, N times: N + 1 images of
// one process, each leaving its 10,000 B leak live at its exec. Totals are N + 1 times `sites`;
// the peak is one image's (62,924,560 B: an exec'd image's heap is gone), the leak all of theirs.
//
// Mode `execs-holding N`: allocates 10 blocks of 1,000,000 B and holds them at its exec, N
// times: each image's heap is larger than the others' leaks together (the peak is 10,000,000 B,
// the leak N + 1 times that).
//
// Mode `forkfree`: keeps 100 x malloc(1000), forks; the child frees those 100 copies and runs
// `sites`, the parent runs `sites`, waits, and frees its 100. Calls 2 x `sites` + 100, frees
// 2 x `sites` + 200 (the child frees blocks it did not allocate). Mode `rawforkfree`: the same,
// forked by the raw fork system call, which runs no atfork handler.
//
// Mode `forkleak`: two children, one after the other, each keeps 8 x malloc(1 MiB) and ends with
// it live, the first by exit(0) and the second by _exit(0); once both are gone the parent runs
// 6 x { malloc(1 MiB) } and frees them. Calls 22, bytes 22 MiB, frees 6, leaked 16 MiB; peak
// 8 MiB: a process that has ended holds no heap (before it counted, the peak was 22 MiB).
//
// Mode `forkkill`: a child keeps 8 x malloc(1 MiB) and is killed by SIGKILL; once the parent has
// reaped it (waitpid), the parent holds 6 x malloc(1 MiB) and frees them. Calls 14, bytes 14 MiB,
// frees 6, leaked 8 MiB; peak 8 MiB (a killed process ran no exit path: its heap stayed in the
// live heap, and the peak was 14 MiB).
//
// Mode `reapunseen`: with SIGCHLD ignored (the kernel reaps children, no wait call returns them),
// a child keeps 8 x malloc(1 MiB) and is killed by SIGKILL; the parent's waitpid returns once it
// is gone (ECHILD). Leaked 8 MiB; once every process has ended, nothing is live.
//
// Mode `pidreuse`: a child keeps 8 x malloc(1 MiB) and exits; a second child is given the same
// pid (through /proc/sys/kernel/ns_last_pid, which needs root), keeps 4 x malloc(1 MiB) and
// exits; then the parent holds 10 x malloc(1 MiB) and frees them. Peak 10 MiB, leaked 12 MiB.
// Exits 3 when the pid could not be reused (not root, or another process took it 20 times).
//
// Mode `exit N`: runs `sites`, then exits with status N.
//
// Mode `notsc`: forbids itself the TSC (prctl(PR_SET_TSC, PR_TSC_SIGSEGV), as record-and-replay
// tools do; a read of it then raises SIGSEGV), then runs `sites`. Exits 4 if prctl failed.
//
// Mode `realloc`: the less common entry points, each result checked (exit status 3: calloc or
// reallocarray overflow did not fail with ENOMEM; 4: calloc memory not zeroed; 5: misaligned;
// 6: malloc_usable_size below the request; 7: realloc lost the contents; 8: a shrunk
// over-aligned block moved, which glibc resizes in place; 0: all passed).
//   realloc_chain_zero  realloc(NULL, 1), 20 x realloc doubling to 1 MiB, realloc(p, 0)
//   realloc_chain_free  the same growth, then free(p)
//   aligned_blocks      posix_memalign(64, 1000), posix_memalign(4096, 10000),
//                       aligned_alloc(256, 1024), memalign(128, 100), valloc(100), pvalloc(100),
//                       memalign(4096, 8000) shrunk by realloc to 6000 (in place, still aligned),
//                       posix_memalign(4 GiB, 1000) (an alignment beyond the header's offset)
//   overflow_checks     calloc(SIZE_MAX/2, 4) and reallocarray(malloc(100), SIZE_MAX/2, 4) fail
//   calloc_zeroed       calloc(1000, 10)
//   calls: 44 realloc (43 return memory, realloc(p, 0) frees), 8 aligned, 1 malloc, 2 calloc and
//   1 reallocarray (one calloc and the reallocarray fail); bytes requested by the calls that
//   succeed 4,231,726 (chains 2 x 2,097,151, aligned 27,324, malloc 100, calloc 10,000); peak
//   1,048,576 B when a realloc counts as a move; leaked 0.
//
// Mode `serial-threads N`: N threads, one after another, each 10 x { malloc(32); free }: 10 N
// temporary allocations; past the profiler's 8,192 thread slots they are counted all the same.
//
// Mode `bigpeak`: peak_base_block holds malloc(32 MiB), then peak_top_block malloc(64 MiB) on
// top of it; both freed. Calls 2, peak 96 MiB, and the peak is made by one allocation: the
// last (peak_top_block's), which the sampled set at the peak must hold.
//
// Mode `_exit`: 3 x malloc(1000), never freed, then _exit(0), which runs no destructor: calls
// 3, bytes 3,000, peak 3,000 B (a rise below the preload's 4 KiB publishing step), leaked 3,000.
//
// Mode `closefds PATH`: runs `sites`, closes every descriptor from 3 to 1023 (as a daemon does
// at start-up), creates PATH (which takes the lowest free number), writes "kept\n" to it, runs
// `sites` again and closes it: PATH must hold exactly "kept\n" (nothing of the profiler's may
// write to a number the program closed and reused). Totals are twice `sites`.
//
// Mode `interrupted-writers`: two ways a writer of the library's ring can stop while it holds
// the ring's lock, each of which left every later sampled allocation of the run waiting
// forever: 30 children that allocate until they are killed (SIGKILL 5 ms after their 1,000th
// malloc + free), and 100 rounds of two threads cancelled (deferred) in an allocation loop (1 ms
// after each one's 1,000th). Exits 0 when all ran to the end.
// (The third, a signal handler that allocates, is not async-signal-safe even without the
// library: glibc's own heap checks abort such a program now and then.)
//
// Mode `nofiles`: lowers RLIMIT_NOFILE to 64 and opens /dev/null until open fails with EMFILE
// (as a server under load may), then runs `sites` in the main thread while one thread runs what
// a thread of `threads` does, which the main thread frees after joining it: the library can
// open nothing, /proc/self/maps included. Totals are `sites` plus `threads 1` (and its DTV).
//
// Mode `mmap [MIB]`: an allocator of its own, as jemalloc or mimalloc would be: MIB (default
// 96) MiB from mmap, every page touched, and nothing from malloc. The preload sees no heap while the RSS grows.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KIB 4096u
#define MIB (1024u * 1024u)

// A volatile store per page makes the pages real; the barrier makes the pointer escape, so the
// compiler cannot drop a malloc/free pair as dead.
__attribute__((noinline)) static void touch(void* p, size_t n) {
  for (size_t i = 0; i < n; i += KIB) ((volatile char*)p)[i] = (char)i;
  __asm__ volatile("" : : "r"(p) : "memory");
}

__attribute__((noinline)) void leak_blocks(void) {
  for (int i = 0; i < 10; ++i) touch(malloc(1000), 1000);
}

__attribute__((noinline)) void small_temporaries(void) {
  for (int i = 0; i < 1310720; ++i) {
    void* p = malloc(16);
    touch(p, 16);
    free(p);
  }
}

__attribute__((noinline)) void medium_live_set(void) {
  enum { kCount = 15360 };
  // The pointer array comes from mmap so it is not an allocation of its own.
  void** live = mmap(NULL, kCount * sizeof(void*), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (live == MAP_FAILED) _exit(2);
  for (int i = 0; i < kCount; ++i) {
    live[i] = malloc(4096);
    touch(live[i], 4096);
  }
  for (int i = 0; i < kCount; ++i) free(live[i]);
  munmap(live, kCount * sizeof(void*));
}

__attribute__((noinline)) void big_pairs(void) {
  for (int i = 0; i < 60; ++i) {
    void* a = malloc(MIB);
    void* b = malloc(MIB);
    touch(a, MIB);
    touch(b, MIB);
    free(a);
    free(b);
  }
}

__attribute__((noinline)) void run_sites(void) {
  leak_blocks();
  small_temporaries();
  medium_live_set();
  big_pairs();
}

// ---- threads ----

enum { kMaxThreads = 64, kKeptPerThread = 1000 };
static void* g_kept[kMaxThreads][kKeptPerThread];  // static, so keeping them allocates nothing

__attribute__((noinline)) void thread_temporaries(void) {
  for (int i = 0; i < 200000; ++i) {
    void* p = malloc(64);
    touch(p, 64);
    free(p);
  }
}

__attribute__((noinline)) void thread_keep_blocks(void** kept) {
  for (int i = 0; i < kKeptPerThread; ++i) {
    kept[i] = malloc(256);
    touch(kept[i], 256);
  }
}

__attribute__((noinline)) void main_frees_thread_blocks(void** kept) {
  for (int i = 0; i < kKeptPerThread; ++i) free(kept[i]);
}

static void* ThreadMain(void* arg) {
  thread_temporaries();
  thread_keep_blocks(arg);
  return NULL;
}

static int RunThreads(int n) {
  pthread_t threads[kMaxThreads];
  if (n < 1 || n > kMaxThreads) return 2;
  for (int i = 0; i < n; ++i)
    if (pthread_create(&threads[i], NULL, ThreadMain, g_kept[i]) != 0) return 2;
  for (int i = 0; i < n; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < n; ++i) main_frees_thread_blocks(g_kept[i]);
  return 0;
}

// One after another, so the profiler's 8,192 thread slots run out: each does 10 x { malloc(32);
// free }.
static void* SerialThreadMain(void* arg) {
  (void)arg;
  for (int i = 0; i < 10; ++i) {
    void* volatile p = malloc(32);
    free(p);
  }
  return NULL;
}

static int RunSerialThreads(int n) {
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, SerialThreadMain, NULL) != 0) return 2;
    if (pthread_join(t, NULL) != 0) return 2;
  }
  return 0;
}

// Mode `exit-while-blocked [kill | kill-unseen | stay FILE]`: a thread allocates 20 blocks of
// 300 B, frees them, and blocks for good; then the main thread calls exit(0), or with `kill`
// kills the process with SIGKILL, or with `stay` writes its pid to FILE and blocks too (for the
// test to kill once the recording stopped). With `kill-unseen` a forked child does what `kill`
// does, and the parent reaps it with the raw wait4 system call (no wait call the library sees)
// and then runs 1.2 s more. Nothing is leaked: the thread's frees are counted though it never runs
// again (under --alloc=1 they wait in its batch until the process ends, or the profiler stops).
static pthread_mutex_t g_freed_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_freed_cond = PTHREAD_COND_INITIALIZER;
static int g_freed;

__attribute__((noinline)) static void frees_then_blocks(void) {
  void* blocks[20];
  for (int i = 0; i < 20; ++i) blocks[i] = malloc(300);
  __asm__ volatile("" : : "r"(blocks) : "memory");
  for (int i = 0; i < 20; ++i) free(blocks[i]);
}

static void* BlockedThreadMain(void* arg) {
  (void)arg;
  frees_then_blocks();
  pthread_mutex_lock(&g_freed_lock);
  g_freed = 1;
  pthread_cond_signal(&g_freed_cond);
  pthread_mutex_unlock(&g_freed_lock);
  for (;;) pause();
  return NULL;
}

static int RunExitWhileBlocked(const char* how, const char* pid_file) {
  if (how != NULL && strcmp(how, "kill-unseen") == 0) {
    pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) _exit(RunExitWhileBlocked("kill", NULL));
    int status = 0;
    if (syscall(SYS_wait4, child, &status, 0, NULL) != child) return 2;
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) return 3;
    const struct timespec pause = {1, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    return 0;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, BlockedThreadMain, NULL) != 0) return 2;
  pthread_mutex_lock(&g_freed_lock);
  while (!g_freed) pthread_cond_wait(&g_freed_cond, &g_freed_lock);
  pthread_mutex_unlock(&g_freed_lock);
  if (how != NULL && strcmp(how, "kill") == 0) kill(getpid(), SIGKILL);
  if (how != NULL && strcmp(how, "stay") == 0 && pid_file != NULL) {
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", pid_file);
    FILE* f = fopen(tmp, "w");
    if (f == NULL) return 2;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    if (rename(tmp, pid_file) != 0) return 2;  // whole when it appears
    for (;;) pause();
  }
  exit(0);
}

// ---- forkexec ----

static int RunForkExec(char* argv0) {
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    char* args[] = {argv0, "sites", NULL};
    execv("/proc/self/exe", args);
    _exit(127);
  }
  run_sites();
  int status;
  if (waitpid(pid, &status, 0) != pid) return 2;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// Execs `/proc/self/exe MODE left-1`.
static int ExecNext(char* argv0, char* mode, int left) {
  char digits[12];  // no stdio (see the top): left - 1 in decimal by hand
  int at = (int)sizeof(digits) - 1;
  digits[at] = '\0';
  for (int v = left - 1; at == (int)sizeof(digits) - 1 || v > 0; v /= 10) {
    digits[--at] = (char)('0' + v % 10);
  }
  char* args[] = {argv0, mode, digits + at, NULL};
  execv("/proc/self/exe", args);
  return 127;
}

static int RunExecs(char* argv0, int left) {
  run_sites();
  return left <= 0 ? 0 : ExecNext(argv0, "execs", left);
}

static int RunExecsHolding(char* argv0, int left) {
  for (int i = 0; i < 10; ++i) touch(malloc(1000000), 1000000);
  return left <= 0 ? 0 : ExecNext(argv0, "execs-holding", left);
}

static int RunForkFree(int raw) {
  void* kept[100];
  for (int i = 0; i < 100; ++i) {
    kept[i] = malloc(1000);
    touch(kept[i], 1000);
  }
  // The raw system call runs none of glibc's atfork handlers.
  pid_t pid = raw ? (pid_t)syscall(SYS_fork) : fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    for (int i = 0; i < 100; ++i) free(kept[i]);
    run_sites();
    _exit(0);
  }
  run_sites();
  int status;
  if (waitpid(pid, &status, 0) != pid) return 2;
  for (int i = 0; i < 100; ++i) free(kept[i]);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// Keeps n x malloc(1 MiB) to the end of the process.
__attribute__((noinline)) static void child_keeps(int n) {
  for (int i = 0; i < n; ++i) touch(malloc(MIB), MIB);
}

// Holds n (at most 16) x malloc(1 MiB) at once, then frees them.
__attribute__((noinline)) static void parent_after(int n) {
  void* blocks[16];
  for (int i = 0; i < n; ++i) {
    blocks[i] = malloc(MIB);
    touch(blocks[i], MIB);
  }
  for (int i = 0; i < n; ++i) free(blocks[i]);
}

static void keep_8(void) { child_keeps(8); }
static void keep_4(void) { child_keeps(4); }

static int RunForkLeak(void) {
  for (int child = 0; child < 2; ++child) {
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      child_keeps(8);
      if (child == 0) exit(0);
      _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return 1;
    }
  }
  parent_after(6);
  return 0;
}

// Forks a child that keeps 8 x malloc(1 MiB) and is killed by SIGKILL; returns its pid (-1 when
// fork failed).
static pid_t ForkKilledChild(void) {
  pid_t pid = fork();
  if (pid == 0) {
    child_keeps(8);
    raise(SIGKILL);
    _exit(1);
  }
  return pid;
}

static int RunForkKill(void) {
  const pid_t pid = ForkKilledChild();
  if (pid < 0) return 2;
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    return 1;
  }
  parent_after(6);
  return 0;
}

static int RunReapUnseen(void) {
  signal(SIGCHLD, SIG_IGN);
  const pid_t pid = ForkKilledChild();
  if (pid < 0) return 2;
  int status;
  return waitpid(pid, &status, 0) == -1 && errno == ECHILD ? 0 : 1;
}

// Forks with the next pid set to `pid` (0: any); the child runs `body` and exits 0. Returns the
// child's pid once it has exited 0, -1 on failure.
static pid_t ForkRun(pid_t pid, void (*body)(void), pid_t* got) {
  if (pid > 0) {
    int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
    if (fd < 0) return -1;
    char text[16];
    int n = 0;
    for (pid_t v = pid - 1; v > 0; v /= 10) text[n++] = (char)('0' + v % 10);
    char out[16];
    for (int i = 0; i < n; ++i) out[i] = text[n - 1 - i];
    int ok = write(fd, out, (size_t)n) == n;
    close(fd);
    if (!ok) return -1;
  }
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (pid <= 0 || getpid() == pid) body();
    exit(0);
  }
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return -1;
  }
  *got = child;
  return child;
}

static int RunPidReuse(void) {
  pid_t first = 0, second = 0;
  if (ForkRun(0, keep_8, &first) < 0) return 2;
  for (int attempt = 0; attempt < 20 && second != first; ++attempt) {
    if (ForkRun(first, keep_4, &second) < 0) return 3;
  }
  if (second != first) return 3;
  parent_after(10);
  return 0;
}

// ---- realloc and friends ----

// Volatile so the compiler cannot see the overflow and fold or warn about the failing calls.
static volatile size_t g_huge = SIZE_MAX / 2;

static int Usable(void* p, size_t n) { return p != NULL && malloc_usable_size(p) >= n; }

// Grows one block from 1 B to 1 MiB, checking that realloc carries the first byte along.
__attribute__((noinline)) static char* grow_by_doubling(int* status) {
  char* p = realloc(NULL, 1);
  if (!Usable(p, 1)) { *status = 6; return p; }
  p[0] = 'x';
  for (size_t n = 2; n <= MIB; n *= 2) {
    p = realloc(p, n);
    if (!Usable(p, n)) { *status = 6; return p; }
    if (p[0] != 'x') { *status = 7; return p; }
    touch(p, n);
    p[0] = 'x';
  }
  return p;
}

__attribute__((noinline)) int realloc_chain_zero(void) {
  int status = 0;
  char* p = grow_by_doubling(&status);
  if (realloc(p, 0) != NULL) return 6;  // glibc frees the block and returns NULL
  return status;
}

__attribute__((noinline)) int realloc_chain_free(void) {
  int status = 0;
  free(grow_by_doubling(&status));
  return status;
}

static int CheckAligned(void* p, size_t align, size_t n) {
  if (p == NULL || (uintptr_t)p % align != 0) return 5;
  if (!Usable(p, n)) return 6;
  touch(p, n);
  return 0;
}

__attribute__((noinline)) int aligned_blocks(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void* p[6] = {NULL};
  int status = 0;
  if (posix_memalign(&p[0], 64, 1000) != 0) p[0] = NULL;
  if (!status) status = CheckAligned(p[0], 64, 1000);
  if (posix_memalign(&p[1], 4096, 10000) != 0) p[1] = NULL;
  if (!status) status = CheckAligned(p[1], 4096, 10000);
  p[2] = aligned_alloc(256, 1024);
  if (!status) status = CheckAligned(p[2], 256, 1024);
  p[3] = memalign(128, 100);
  if (!status) status = CheckAligned(p[3], 128, 100);
  p[4] = valloc(100);
  if (!status) status = CheckAligned(p[4], page, 100);
  p[5] = pvalloc(100);
  if (!status) status = CheckAligned(p[5], page, page);  // pvalloc rounds up to a whole page
  for (int i = 0; i < 6; ++i) free(p[i]);
  if (status) return status;
  char* wide = memalign(4096, 8000);
  if (wide == NULL) return 2;
  touch(wide, 8000);
  char* narrow = realloc(wide, 6000);
  if (narrow != wide) status = 8;
  if (!status) status = CheckAligned(narrow, 4096, 6000);
  free(narrow);
  void* far = NULL;
  if (posix_memalign(&far, (size_t)1 << 32, 1000) != 0) far = NULL;
  if (!status) status = CheckAligned(far, (size_t)1 << 32, 1000);
  free(far);
  return status;
}

__attribute__((noinline)) int overflow_checks(void) {
  errno = 0;
  void* p = calloc(g_huge, 4);
  if (p != NULL || errno != ENOMEM) return 3;
  void* q = malloc(100);
  if (q == NULL) return 2;
  errno = 0;
  p = reallocarray(q, g_huge, 4);
  int status = p == NULL && errno == ENOMEM ? 0 : 3;
  free(p != NULL ? p : q);  // a failed reallocarray leaves q allocated
  return status;
}

__attribute__((noinline)) int calloc_zeroed(void) {
  unsigned char* p = calloc(1000, 10);
  if (!Usable(p, 10000)) return 6;
  int status = 0;
  for (int i = 0; i < 10000; ++i)
    if (p[i] != 0) status = 4;
  touch(p, 10000);
  free(p);
  return status;
}

// Mode `realloc-fails`: realloc(malloc(300), SIZE_MAX / 4) and realloc(aligned_alloc(64, 300),
// SIZE_MAX / 4) fail with ENOMEM and leave their blocks allocated, as does realloc(malloc(300),
// 1 GiB) under an address-space limit that leaves less than that (a size the allocator could
// give but cannot now). The program then leaks the three: 3 allocations, no free, no temporary
// allocation, 900 B leaked.
static void* volatile g_leaked_by_realloc_fails[3];

// RLIMIT_AS at what the process maps now plus `spare` bytes; false when it cannot be read.
// Read without stdio, which would allocate.
static int limit_address_space(size_t spare, struct rlimit* before) {
  char text[64] = {0};
  const int fd = open("/proc/self/statm", O_RDONLY);
  const ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
  if (fd >= 0) close(fd);
  const unsigned long pages = n > 0 ? strtoul(text, NULL, 10) : 0;
  if (pages == 0 || getrlimit(RLIMIT_AS, before) != 0) return 0;
  struct rlimit lower = {pages * (size_t)sysconf(_SC_PAGESIZE) + spare, before->rlim_max};
  return setrlimit(RLIMIT_AS, &lower) == 0;
}

// The realloc, in a function of its own: a refused realloc must leave its block at the site
// that allocated it (realloc_fails), not move it here.
__attribute__((noinline)) static void* refused_realloc(void* block, size_t size, int* refused) {
  errno = 0;
  void* q = realloc(block, size);
  *refused = errno;
  __asm__ volatile("" : : "r"(q) : "memory");  // a call, not a tail call
  return q;
}

__attribute__((noinline)) static int realloc_fails(void) {
  void* blocks[3] = {malloc(300), aligned_alloc(64, 300), malloc(300)};
  for (int i = 0; i < 3; ++i) {
    if (blocks[i] == NULL) return 2;
    struct rlimit before;
    if (i == 2 && !limit_address_space((size_t)64 << 20, &before)) return 2;
    int refused = 0;
    void* q = refused_realloc(blocks[i], i == 2 ? (size_t)1 << 30 : SIZE_MAX / 4, &refused);
    if (i == 2) setrlimit(RLIMIT_AS, &before);
    if (q != NULL || refused != ENOMEM) return 3;
    g_leaked_by_realloc_fails[i] = blocks[i];
  }
  return 0;
}

__attribute__((noinline)) static char* peak_base_block(void) {
  char* p = malloc((size_t)32 << 20);
  if (p != NULL) touch(p, KIB);
  return p;
}

__attribute__((noinline)) static char* peak_top_block(void) {
  char* p = malloc((size_t)64 << 20);
  if (p != NULL) touch(p, KIB);
  return p;
}

static int RunBigPeak(void) {
  char* base = peak_base_block();
  char* top = peak_top_block();
  if (base == NULL || top == NULL) return 2;
  free(top);
  free(base);
  return 0;
}

static int RunRealloc(void) {
  int (*const checks[])(void) = {realloc_chain_zero, realloc_chain_free, aligned_blocks,
                                 overflow_checks, calloc_zeroed};
  for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); ++i) {
    int status = checks[i]();
    if (status != 0) return status;
  }
  return 0;
}

static void Say(const char* s) { (void)!write(2, s, strlen(s)); }

static int RunOwnAllocator(const char* mib) {
  const size_t bytes = (size_t)(mib != NULL ? atoi(mib) : 96) << 20;
  char* arena = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (arena == MAP_FAILED) return 8;
  for (size_t i = 0; i < bytes; i += 4096) arena[i] = (char)i;
  __asm__ volatile("" : : "r"(arena) : "memory");
  return munmap(arena, bytes) == 0 ? 0 : 8;
}

// Mode `foreignfree`, for a program linked to an allocator of its own (alloc_linked_standin):
// 1,000 blocks that allocator hands out itself (its operator new, as jemalloc's does for a C++
// program) given back through realloc, malloc_usable_size and free, as a C++ runtime does, and
// 1,000 x { malloc(100); free }. The stand-in aborts on a block that is not its own, so this
// exits 0 only if every block went back to the allocator it came from.
static int RunForeignFree(void) {
  void* (*own_new)(size_t) = (void* (*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
  if (own_new == NULL) return 11;
  for (int i = 0; i < 1000; ++i) {
    char* p = own_new(100);
    if (p == NULL) return 12;
    memset(p, 1, 100);
    if (malloc_usable_size(p) < 100) return 13;
    p = realloc(p, 200);
    if (p == NULL || p[99] != 1) return 14;
    free(p);
    void* volatile q = malloc(100);
    free(q);
  }
  return 0;
}

static void* volatile g_sink;

// Each interrupted writer makes at least this many malloc + free pairs before it is stopped, so
// the run's total does not depend on how fast the machine forks and schedules (the test checks
// the total to know the writers ran).
enum { kPairsBeforeStop = 1000 };
static atomic_int g_threads_going;

static void* CancelledLoop(void* arg) {
  (void)arg;
  for (long n = 1;; ++n) {
    void* volatile p = malloc(64);
    free(p);
    if (n == kPairsBeforeStop) atomic_fetch_add(&g_threads_going, 1);
    pthread_testcancel();
  }
  return NULL;
}

static int RunInterruptedWriters(void) {
  for (int round = 0; round < 30; ++round) {
    int going[2];
    if (pipe(going) != 0) return 10;
    const pid_t child = fork();
    if (child < 0) return 10;
    if (child == 0) {
      for (long n = 1;; ++n) {
        g_sink = malloc(64);
        free(g_sink);
        if (n == kPairsBeforeStop && write(going[1], "g", 1) != 1) _exit(10);
      }
    }
    char c;
    if (read(going[0], &c, 1) != 1) return 10;
    close(going[0]);
    close(going[1]);
    usleep(5000);
    kill(child, SIGKILL);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFSIGNALED(status)) return 10;
    for (int i = 0; i < 100; ++i) {
      g_sink = malloc(32);
      free(g_sink);
    }
  }
  for (int round = 0; round < 100; ++round) {
    pthread_t threads[2];
    atomic_store(&g_threads_going, 0);
    for (int i = 0; i < 2; ++i) {
      if (pthread_create(&threads[i], NULL, CancelledLoop, NULL) != 0) return 11;
    }
    while (atomic_load(&g_threads_going) < 2) usleep(100);
    usleep(1000);
    for (int i = 0; i < 2; ++i) pthread_cancel(threads[i]);
    for (int i = 0; i < 2; ++i) {
      void* result = NULL;
      if (pthread_join(threads[i], &result) != 0 || result != PTHREAD_CANCELED) return 11;
    }
  }
  return 0;
}

static int RunCloseFds(const char* path) {
  run_sites();
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 9;
  if (write(fd, "kept\n", 5) != 5) return 9;
  run_sites();
  return close(fd) == 0 ? 0 : 9;
}

// ---- nofiles ----

// Uses up every descriptor RLIMIT_NOFILE allows (as a server does under load), then allocates in
// the main thread and in a thread: the library cannot open /proc/self/maps to find either stack.
static int RunWithoutDescriptors(void) {
  const struct rlimit few = {64, 64};
  if (setrlimit(RLIMIT_NOFILE, &few) != 0) return 9;
  while (open("/dev/null", O_RDONLY) >= 0) {
  }
  if (errno != EMFILE) return 9;  // also when 64 were open already: none is free either way
  pthread_t thread;
  if (pthread_create(&thread, NULL, ThreadMain, g_kept[0]) != 0) return 9;
  run_sites();
  if (pthread_join(thread, NULL) != 0) return 9;
  main_frees_thread_blocks(g_kept[0]);
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "sites";
  if (strcmp(mode, "sites") == 0) {
    // `sites N` runs it N times: N times every total, and enough bytes for tight shares at the
    // default sampling rate.
    for (int i = 0, n = argc > 2 ? atoi(argv[2]) : 1; i < n; ++i) run_sites();
    return 0;
  }
  if (strcmp(mode, "threads") == 0) return RunThreads(argc > 2 ? atoi(argv[2]) : 4);
  if (strcmp(mode, "forkexec") == 0) return RunForkExec(argv[0]);
  if (strcmp(mode, "execs") == 0) return RunExecs(argv[0], argc > 2 ? atoi(argv[2]) : 1);
  if (strcmp(mode, "execs-holding") == 0) {
    return RunExecsHolding(argv[0], argc > 2 ? atoi(argv[2]) : 1);
  }
  if (strcmp(mode, "forkfree") == 0) return RunForkFree(0);
  if (strcmp(mode, "rawforkfree") == 0) return RunForkFree(1);
  if (strcmp(mode, "forkleak") == 0) return RunForkLeak();
  if (strcmp(mode, "pidreuse") == 0) return RunPidReuse();
  if (strcmp(mode, "forkkill") == 0) return RunForkKill();
  if (strcmp(mode, "reapunseen") == 0) return RunReapUnseen();
  if (strcmp(mode, "_exit") == 0) {
    for (int i = 0; i < 3; ++i) touch(malloc(1000), 1000);
    _exit(0);
  }
  if (strcmp(mode, "exit") == 0) {
    run_sites();
    exit(argc > 2 ? atoi(argv[2]) : 0);
  }
  if (strcmp(mode, "notsc") == 0) {
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV) != 0) return 4;
    run_sites();
    return 0;
  }
  if (strcmp(mode, "realloc") == 0) return RunRealloc();
  if (strcmp(mode, "realloc-fails") == 0) return realloc_fails();
  if (strcmp(mode, "bigpeak") == 0) return RunBigPeak();
  if (strcmp(mode, "mmap") == 0) return RunOwnAllocator(argc > 2 ? argv[2] : NULL);
  if (strcmp(mode, "foreignfree") == 0) return RunForeignFree();
  if (strcmp(mode, "exit-while-blocked") == 0) {
    return RunExitWhileBlocked(argc > 2 ? argv[2] : NULL, argc > 3 ? argv[3] : NULL);
  }
  if (strcmp(mode, "closefds") == 0 && argc > 2) return RunCloseFds(argv[2]);
  if (strcmp(mode, "interrupted-writers") == 0) return RunInterruptedWriters();
  if (strcmp(mode, "nofiles") == 0) return RunWithoutDescriptors();
  if (strcmp(mode, "serial-threads") == 0) return RunSerialThreads(argc > 2 ? atoi(argv[2]) : 1);
  Say("usage: alloc_workload [sites [N] | realloc | threads [N] | serial-threads N | forkexec | "
      "execs N | execs-holding N | forkfree | rawforkfree | forkleak | pidreuse | exit N | notsc | "
      "realloc-fails | mmap [MIB] | foreignfree | exit-while-blocked [kill | kill-unseen | stay FILE] | closefds PATH | interrupted-writers | nofiles]\n");
  return 2;
}
