// Burns CPU in spin_until_signal until SIGINT or SIGTERM arrives (default disposition: it dies of
// the signal), printing "ready" on stdout once running so a test knows when to interrupt.
// `fp_until_signal graceful`: catches SIGINT instead, as a server or benchmark that shuts down
// cleanly does; after the first it spins 0.3 s more (its shutdown), prints
// "shut down after N SIGINT" with the number it got by then, and exits 0.
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fp_common.h"

static volatile sig_atomic_t g_sigints;

static void CountSigint(int sig) {
  (void)sig;
  ++g_sigints;
}

__attribute__((noinline)) void spin_until_signal(void) {
  for (;;) NP_SPIN(100000);
}

__attribute__((noinline)) void spin_until_sigint_counted(void) {
  while (g_sigints == 0) NP_SPIN(100000);
}

__attribute__((noinline)) void shut_down(void) {
  const double end = ProcessCpuSeconds() + 0.3;
  while (ProcessCpuSeconds() < end) NP_SPIN(100000);
}

int main(int argc, char** argv) {
  const int graceful = argc > 1 && strcmp(argv[1], "graceful") == 0;
  if (graceful) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = CountSigint;
    sigaction(SIGINT, &sa, NULL);
  }
  printf("ready\n");
  fflush(stdout);
  if (!graceful) spin_until_signal();
  spin_until_sigint_counted();
  shut_down();
  printf("shut down after %d SIGINT\n", (int)g_sigints);
  return 0;
}
