// Spends CPU in heavy_function and light_function in a 3:1 ratio by construction (three times the
// iterations, interleaved in small chunks so sampling noise hits both alike), for about
// argv[1] milliseconds of CPU time (default 1500).
#include <stdio.h>
#include <stdlib.h>

#include "fp_common.h"

#define CHUNK 200000ull

__attribute__((noinline)) void heavy_function(void) { NP_SPIN(3 * CHUNK); }
__attribute__((noinline)) void light_function(void) { NP_SPIN(CHUNK); }

__attribute__((noinline)) void run_chunks(double seconds) {
  double start = ProcessCpuSeconds();
  while (ProcessCpuSeconds() - start < seconds) {
    for (int i = 0; i < 16; ++i) {
      heavy_function();
      light_function();
    }
  }
}

int main(int argc, char** argv) {
  double ms = argc > 1 ? atof(argv[1]) : 1500;
  run_chunks(ms / 1000.0);
  return 0;
}
