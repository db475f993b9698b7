// CPU-bound test program for DWARF unwinding, built -O2 -fomit-frame-pointer: deep recursion,
// inlined helpers, a shared library that calls back, a signal handler that burns CPU (signal
// frames) and several threads.
// Usage: nofp_workload [seconds=1] [threads=2] [depth=40] [deep_depth=200]
// deep_depth frames of ~128 bytes outgrow an 8 KiB stack copy at about 60.
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef uint64_t (*nofp_callback)(uint64_t);
uint64_t nofp_shared_call(nofp_callback cb, uint64_t x);

static volatile uint64_t sink;
static double seconds = 1.0;
static int depth = 40;
static int deep_depth = 200;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline uint64_t InlinedStep(uint64_t x) { return (x ^ (x >> 7)) * 0x9E3779B97F4A7C15ull; }

// The length varies with x (1500-2523 steps, 2011 on average) so that the loop's period does not
// stay in step with a 999 Hz sampling timer: a fixed length made runs alias, and the shares of
// the four kinds of work drifted between runs by more than sampling noise.
__attribute__((noinline)) uint64_t LeafWork(uint64_t x) {
  const int steps = 1500 + (int)(x & 1023);
  for (int i = 0; i < steps; ++i) x = InlinedStep(x) + i;
  return x;
}

__attribute__((noinline)) uint64_t Callback(uint64_t x) { return LeafWork(x) + 1; }

__attribute__((noinline)) uint64_t Recurse(int n, uint64_t x) {
  if (n == 0) return LeafWork(x);
  uint64_t r = Recurse(n - 1, x + n);
  return r ^ (uint64_t)n;  // not a tail call
}

__attribute__((noinline)) uint64_t ViaShared(uint64_t x) { return nofp_shared_call(Callback, x); }

__attribute__((noinline)) uint64_t DeepRecurse(int n, uint64_t x) {
  volatile char pad[96];  // big frames so deep recursion outgrows the copied stack
  pad[0] = (char)n;
  if (n == 0) return LeafWork(x + pad[0]);
  return DeepRecurse(n - 1, x * 3) + pad[0];
}

__attribute__((noinline)) static void SignalWork(void) {
  for (int i = 0; i < 100; ++i) sink += LeafWork(sink);
}

static void OnSignal(int sig) {
  (void)sig;
  SignalWork();
}

__attribute__((noinline)) void WorkLoop(uint64_t seed) {
  const double end = Now() + seconds;
  uint64_t x = seed;
  while (Now() < end) {
    x += Recurse(depth, x);
    x += ViaShared(x);
    x += DeepRecurse(deep_depth, x);
    x += LeafWork(x);
  }
  sink += x;
}

static void* ThreadMain(void* arg) {
  WorkLoop((uint64_t)(uintptr_t)arg);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) seconds = atof(argv[1]);
  int threads = argc > 2 ? atoi(argv[2]) : 2;
  if (argc > 3) depth = atoi(argv[3]);
  if (argc > 4) deep_depth = atoi(argv[4]);
  // Every 20 ms of the process's CPU time, not of wall time: the handler's share of the CPU is
  // then the same however much CPU a loaded machine gives the process (with a wall-clock timer
  // it grew as the loops got less, and two runs compared by the tests drifted apart).
  signal(SIGPROF, OnSignal);
  struct itimerval it = {{0, 20000}, {0, 20000}};
  setitimer(ITIMER_PROF, &it, NULL);
  pthread_t tids[64];
  if (threads > 64) threads = 64;
  for (int i = 1; i < threads; ++i) pthread_create(&tids[i], NULL, ThreadMain, (void*)(uintptr_t)i);
  WorkLoop(12345);
  for (int i = 1; i < threads; ++i) pthread_join(tids[i], NULL);
  return (int)(sink & 1) * 0;
}
