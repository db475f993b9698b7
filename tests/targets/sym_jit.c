// JIT-style test program for the symbolizer: copies a tiny x86-64 loop into anonymous executable
// memory, announces it in /tmp/perf-PID.map as "jit_spin_loop" (the perf map convention every JIT
// uses), prints "pid PID", and runs the generated code for the given seconds (default 0.5).
// The caller removes the map file afterwards.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 0.5;
#if defined(__x86_64__)
  // mov ecx, 200000; 1: dec ecx; jnz 1b; ret
  static const uint8_t kCode[] = {0xB9, 0x40, 0x0D, 0x03, 0x00, 0xFF, 0xC9, 0x75, 0xFC, 0xC3};
#else
  fprintf(stderr, "sym_jit: x86-64 only\n");
  return 2;
#endif
  size_t size = 4096;
  uint8_t* code = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 1;
  memcpy(code, kCode, sizeof(kCode));
  if (mprotect(code, size, PROT_READ | PROT_EXEC) != 0) return 1;

  char path[64];
  snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
  FILE* map = fopen(path, "w");
  if (map == NULL) return 1;
  fprintf(map, "%lx %zx jit_spin_loop\n", (unsigned long)(uintptr_t)code, sizeof(kCode));
  fclose(map);
  printf("pid %d\n", (int)getpid());
  fflush(stdout);

  void (*fn)(void) = (void (*)(void))code;
  double end = Now() + seconds;
  while (Now() < end) {
    for (int i = 0; i < 100; ++i) fn();
  }
  return 0;
}
