// Shared by the frame-pointer test targets: CPU-time measurement and a busy loop the optimizer
// cannot remove. Each target is built with frame pointers and without inlining or sibling calls,
// so its functions appear in kernel frame-pointer callchains exactly as written.
#ifndef NATIVEPROF_TESTS_TARGETS_FP_COMMON_H_
#define NATIVEPROF_TESTS_TARGETS_FP_COMMON_H_

#include <stdint.h>
#include <time.h>

static inline double ThreadCpuSeconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double ProcessCpuSeconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// A data dependency per iteration keeps the loop from being vectorized away or folded.
#define NP_SPIN(iterations)                         \
  do {                                              \
    volatile uint64_t np_sink = 0;                  \
    uint64_t np_x = 88172645463325252ull;           \
    for (uint64_t np_i = 0; np_i < (iterations); ++np_i) { \
      np_x ^= np_x << 13;                           \
      np_x ^= np_x >> 7;                            \
      np_x ^= np_x << 17;                           \
    }                                               \
    np_sink = np_x;                                 \
    (void)np_sink;                                  \
  } while (0)

#endif  // NATIVEPROF_TESTS_TARGETS_FP_COMMON_H_
