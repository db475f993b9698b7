// Three worker threads, each burning CPU in its own function (thread_alpha_work,
// thread_beta_work, thread_gamma_work) for about argv[1] ms of CPU time (default 800); the main
// thread waits, or with argv[2] "main-exits" ends at once with pthread_exit (the process runs on
// with a zombie main thread, whose /proc maps read empty). Each thread is named with
// pthread_setname_np so it shows as its own comm.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp_common.h"

static double g_seconds;

__attribute__((noinline)) void thread_alpha_work(void) {
  double start = ThreadCpuSeconds();
  while (ThreadCpuSeconds() - start < g_seconds) NP_SPIN(100000);
}
__attribute__((noinline)) void thread_beta_work(void) {
  double start = ThreadCpuSeconds();
  while (ThreadCpuSeconds() - start < g_seconds) NP_SPIN(100000);
}
__attribute__((noinline)) void thread_gamma_work(void) {
  double start = ThreadCpuSeconds();
  while (ThreadCpuSeconds() - start < g_seconds) NP_SPIN(100000);
}

static void* Alpha(void* arg) {
  pthread_setname_np(pthread_self(), "alpha");
  thread_alpha_work();
  return arg;
}
static void* Beta(void* arg) {
  pthread_setname_np(pthread_self(), "beta");
  thread_beta_work();
  return arg;
}
static void* Gamma(void* arg) {
  pthread_setname_np(pthread_self(), "gamma");
  thread_gamma_work();
  return arg;
}

int main(int argc, char** argv) {
  g_seconds = (argc > 1 ? atof(argv[1]) : 800) / 1000.0;
  pthread_t t[3];
  void* (*fns[3])(void*) = {Alpha, Beta, Gamma};
  for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, fns[i], NULL);
  if (argc > 2 && strcmp(argv[2], "main-exits") == 0) pthread_exit(NULL);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  return 0;
}
