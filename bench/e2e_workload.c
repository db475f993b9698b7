// Fixed-work workload for the end-to-end benchmarks: two threads each run argv[1] million
// iterations (default 4000) of a call tree a few frames deep, so profiled and unprofiled runs do
// identical work and their wall and CPU times can be compared.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t g_iterations;

__attribute__((noinline)) uint64_t leaf_mix(uint64_t x) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}
__attribute__((noinline)) uint64_t middle_a(uint64_t x) { return leaf_mix(x) + 1; }
__attribute__((noinline)) uint64_t middle_b(uint64_t x) { return leaf_mix(x) ^ 3; }
__attribute__((noinline)) uint64_t outer(uint64_t x, uint64_t i) {
  return (i & 3) == 0 ? middle_b(x) : middle_a(x);
}

static void* Worker(void* arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg + 88172645463325252ull;
  for (uint64_t i = 0; i < g_iterations; ++i) x = outer(x, i);
  return (void*)(uintptr_t)(x & 1);
}

int main(int argc, char** argv) {
  g_iterations = (uint64_t)(argc > 1 ? atof(argv[1]) : 4000) * 1000000ull;
  pthread_t t[2];
  for (uintptr_t i = 0; i < 2; ++i) pthread_create(&t[i], NULL, Worker, (void*)i);
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
  return 0;
}
