// Shared library for the symbolizer tests: one exported C function and one hidden C++ one, so a
// lookup in a shared object (file offset -> svma through its PT_LOADs) is exercised.
volatile int g_lib_sink;

namespace symlib {
__attribute__((noinline, visibility("hidden"))) int Hidden(int x) {
  for (int i = 0; i < 100; ++i) g_lib_sink = g_lib_sink + x + i;
  return g_lib_sink;
}
}  // namespace symlib

extern "C" __attribute__((noinline)) int sym_lib_function(int x) { return symlib::Hidden(x) + 1; }
