// exit_stamp OUT CMD [ARG...]: runs CMD, then writes "<exit time> <CPU seconds of CMD's tree>" to
// OUT (CLOCK_REALTIME and rusage, microsecond precision) and exits with CMD's status.
// bench/dwarf_e2e.sh wraps the target in it so that a profiler's own CPU is the CPU of its process
// tree minus the target's; a Python wrapper would add ~0.1 s of interpreter start-up to both sides.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: exit_stamp OUT CMD [ARG...]\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("exit_stamp: fork");
    return 1;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    perror("exit_stamp: exec");
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) {
    perror("exit_stamp: wait4");
    return 1;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec / 1e6;
  FILE* out = fopen(argv[1], "w");
  if (out == NULL || fprintf(out, "%.6f %.6f\n", now.tv_sec + now.tv_nsec / 1e9, cpu) < 0 ||
      fclose(out) != 0) {
    perror("exit_stamp: write");
    return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
