// Burns CPU in spin_until_signal until SIGINT or SIGTERM arrives (default disposition: it dies of
// the signal), printing "ready" on stdout once running so a test knows when to interrupt.
#include <stdio.h>
#include <unistd.h>

#include "fp_common.h"

__attribute__((noinline)) void spin_until_signal(void) {
  for (;;) NP_SPIN(100000);
}

int main(void) {
  printf("ready\n");
  fflush(stdout);
  spin_until_signal();
  return 0;
}
