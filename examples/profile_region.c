/* Profiles one region of a C program with libnativeprof's C API and writes it as folded stacks.
 * Usage: profile_region_c OUT.folded */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "nativeprof/nativeprof.h"

static volatile uint64_t sink;

__attribute__((noinline)) static void SpinInExampleC(double seconds) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  uint64_t x = 1;
  do {
    for (int i = 0; i < 100000; ++i) x = x * 6364136223846793005ull + 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) <
           seconds);
  sink = x;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT.folded\n", argv[0]);
    return 2;
  }
  np_options options;
  np_options_init(&options);
  np_profiler* profiler = NULL;
  np_status s = np_profiler_create(&options, &profiler);
  if (s == NP_OK) s = np_profiler_start(profiler);
  if (s == NP_OK) {
    SpinInExampleC(0.3);
    s = np_profiler_stop(profiler);
  }
  if (s == NP_OK) s = np_profiler_write_folded(profiler, argv[1]);
  if (s != NP_OK) {
    fprintf(stderr, "nativeprof: %s: %s\n", np_status_name(s), np_last_error());
    np_profiler_destroy(profiler);
    return 1;
  }
  np_counter counters[16];
  size_t count = 0;
  if (np_profiler_counters(profiler, counters, 16, &count) == NP_OK) {
    for (size_t i = 0; i < count && i < 16; ++i) {
      if (counters[i].supported) printf("%s %.0f\n", counters[i].name, counters[i].value);
      else printf("%s <not supported>\n", counters[i].name);
    }
  }
  np_profiler_destroy(profiler);
  return 0;
}
