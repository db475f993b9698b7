// N malloc(64) + free pairs and nothing else, for counting what the allocation hooks execute per
// pair under valgrind's callgrind (bench/alloc_e2e.sh): instruction counts do not drift with the
// machine's load as wall times do. Usage: alloc_pair_loop [N=1000000]
#include <stdlib.h>

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 1000000;
  for (long i = 0; i < n; ++i) {
    void* volatile p = malloc(64);
    free(p);
  }
  return 0;
}
