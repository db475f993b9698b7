// Forks; the child execs argv[1] (with the remaining arguments) while the parent burns CPU in
// parent_function, then waits for the child and exits with its status.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp_common.h"

__attribute__((noinline)) void parent_function(double seconds) {
  double start = ThreadCpuSeconds();
  while (ThreadCpuSeconds() - start < seconds) NP_SPIN(100000);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fp_fork_exec PROGRAM [ARGS...]\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[1], argv + 1);
    perror("execv");
    _exit(127);
  }
  parent_function(0.4);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
