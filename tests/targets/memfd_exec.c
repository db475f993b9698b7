// Runs argv[1] (with the remaining arguments) from an in-memory copy: copies the file into a
// memfd and fexecve()s it, as container runtimes and self-unpacking programs do, so its mappings
// are named "/memfd:NAME (deleted)" and no path on disk leads to its ELF image.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: memfd_exec PROGRAM [ARGS...]\n");
    return 2;
  }
  int in = open(argv[1], O_RDONLY | O_CLOEXEC);
  int image = memfd_create("np_memfd_image", MFD_CLOEXEC);
  if (in < 0 || image < 0) {
    perror("memfd_exec");
    return 127;
  }
  char buf[1 << 16];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0) {
    if (write(image, buf, (size_t)n) != n) {
      perror("memfd_exec: write");
      return 127;
    }
  }
  close(in);
  fexecve(image, argv + 1, environ);
  perror("memfd_exec: fexecve");
  return 127;
}
