// Recursion whose innermost level does its work outside its own frame: built with frame pointers
// at -O2, the n == 0 path is shrink-wrapped (no push of rbp), so a sample there holds the
// caller's rbp and the kernel's frame-pointer chain lacks the leaf's return address.
// Usage: fp_edge_recurse [seconds=1] [depth=100]
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) uint64_t EdgeRecurse(int n, uint64_t x) {
  if (n == 0) {
    for (int i = 0; i < 20000; ++i) x = (x ^ (x >> 7)) * 0x9E3779B97F4A7C15ull + (uint64_t)i;
    return x;
  }
  volatile char pad[96];  // ~128-byte frames: 100 levels outgrow an 8 KiB stack copy
  pad[0] = (char)n;
  return EdgeRecurse(n - 1, x * 3) + (uint64_t)pad[0];
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  const int depth = argc > 2 ? atoi(argv[2]) : 100;
  const double end = Now() + seconds;
  uint64_t x = 1;
  while (Now() < end) x += EdgeRecurse(depth, x);
  sink = x;
  return 0;
}
