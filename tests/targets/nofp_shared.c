// Shared library for the DWARF unwinding test programs: built -O2 -fomit-frame-pointer so only
// CFI can unwind through it. Calls back into the executable so stacks cross the module twice.
#include <stdint.h>

typedef uint64_t (*nofp_callback)(uint64_t);

__attribute__((noinline)) uint64_t nofp_shared_mix(uint64_t x) {
  for (int i = 0; i < 64; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

__attribute__((noinline)) uint64_t nofp_shared_call(nofp_callback cb, uint64_t x) {
  return nofp_shared_mix(cb(x)) ^ x;
}
