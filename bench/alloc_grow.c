// A buffer grown by realloc as a Rust Vec or String grows (doubling), to 64 MiB and written as
// it grows, ROUNDS times over: few allocation calls, but each large step is sampled at the default
// rate. It measures what the profiler does to a sampled block's realloc, which glibc would
// extend in place or remap rather than copy. Usage: alloc_grow [ROUNDS=4]. Prints a checksum.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 4;
  uint64_t sum = 0;
  for (int r = 0; r < rounds; ++r) {
    size_t cap = 8, len = 0;
    unsigned char* buf = malloc(cap);
    while (buf != NULL && len < ((size_t)64 << 20)) {
      if (len == cap) {
        cap *= 2;
        unsigned char* grown = realloc(buf, cap);
        if (grown == NULL) break;
        buf = grown;
      }
      memset(buf + len, (int)(len ^ (size_t)r), cap - len);  // the pushes that fill it
      len = cap;
    }
    if (buf == NULL || len < ((size_t)64 << 20)) return 2;
    sum += buf[12345] + buf[len - 1];
    free(buf);
  }
  printf("%llu\n", (unsigned long long)sum);
  return 0;
}
