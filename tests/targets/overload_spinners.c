// An overloaded machine in one process (issue 15): argv[1] threads (default 256) that never block,
// each spinning in overload_spin_leaf under overload_spin_outer and named "spin-<i>", so every
// thread is always runnable and a profiler attached to it has to compete with all of them for a
// CPU. Prints "ready <threads>" on stdout once every thread runs; runs until killed. With
// argv[2] = MS the main thread exits (pthread_exit) MS milliseconds after "ready" while the
// spinners go on: the event a profiler opened on it then hangs up.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fp_common.h"

static atomic_int g_started;

__attribute__((noinline)) void overload_spin_leaf(void) { NP_SPIN(20000); }

__attribute__((noinline)) void overload_spin_outer(void) {
  for (;;) overload_spin_leaf();
}

static void* Spinner(void* arg) {
  char name[16];
  snprintf(name, sizeof(name), "spin-%d", (int)(long)arg);
  pthread_setname_np(pthread_self(), name);
  atomic_fetch_add(&g_started, 1);
  overload_spin_outer();
  return arg;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 256;
  if (threads <= 0) {
    fprintf(stderr, "usage: overload_spinners [THREADS [MAIN_EXITS_AFTER_MS]]\n");
    return 2;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // Small stacks: 500 threads with the default 8 MiB each would reserve 4 GiB of address space.
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    if (pthread_create(&t, &attr, Spinner, (void*)(long)i) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  while (atomic_load(&g_started) < threads) usleep(1000);
  printf("ready %d\n", threads);
  fflush(stdout);
  if (argc > 2) {
    usleep((useconds_t)atoi(argv[2]) * 1000);
    pthread_exit(NULL);
  }
  for (;;) pause();
}
