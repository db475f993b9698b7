// Test program for the symbolizer tests: a few functions with known names (C, C++ templates and
// namespaces, a lambda, an inlined helper, a function with a .cold part, one in a shared library).
// It prints, for each, "name<TAB>mapped path<TAB>file offset (hex)<TAB>address (hex)" from
// /proc/self/maps, then with argument "wait" blocks until stdin closes (so a test can delete the
// binary while it runs), with "spin SECONDS" burns CPU in those functions.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int sym_lib_function(int x);  // sym_lib.cc (only in sym_prog_shared)

volatile int g_sink;

extern "C" __attribute__((noinline)) int sym_c_function(int x) {
  for (int i = 0; i < 100; ++i) g_sink = g_sink + x * i;
  return g_sink;
}

namespace symtest {

template <typename T>
struct Worker {
  __attribute__((noinline)) T Run(T x) {
    for (int i = 0; i < 100; ++i) g_sink = g_sink + static_cast<int>(x) + i;
    return x + g_sink;
  }
};

__attribute__((cold, noinline)) void ReportFailure(int x) {
  std::fprintf(stderr, "unexpected %d\n", x);
}

// The negative branch calls a cold function, so GCC moves it into "WithCold(int) [clone .cold]".
__attribute__((noinline)) int WithCold(int x) {
  if (__builtin_expect(x < 0, 0)) {
    ReportFailure(x);
    std::abort();
  }
  return x * 2 + g_sink;
}

static inline __attribute__((always_inline)) int InlinedHelper(int x) {
  int acc = 0;
  for (int i = 0; i < x; ++i) {
    g_sink = g_sink ^ (acc + i);
    acc += g_sink * 3;
  }
  return acc;
}

__attribute__((noinline)) int InlineCaller(int x) { return InlinedHelper(x) + 1; }

// A lambda inlined into its caller: the inlined frame's DIE has no linkage name, and its class
// no name.
__attribute__((noinline)) int InlinedLambdaCaller(int x) {
  auto lambda = [x](int y) __attribute__((always_inline)) {
    int acc = 0;
    for (int i = 0; i < y; ++i) {
      g_sink = g_sink ^ (acc + i * x);
      acc += g_sink * 3;
    }
    return acc;
  };
  return lambda(x % 64) + 1;
}

}  // namespace symtest

__attribute__((noinline)) int CallLambda(int x) {
  auto lambda = [x](int y) __attribute__((noinline)) {
    for (int i = 0; i < 50; ++i) g_sink = g_sink + x * y + i;
    return g_sink;
  };
  return lambda(x + 1);
}

static void PrintLocation(const char* name, const void* fn) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(fn) + 1;  // inside the function, like avma - 1
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return;
  char line[4096];
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    uint64_t start, end, offset;
    char perms[8];
    int path_pos = 0;
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end, perms,
                    &offset, &path_pos) < 4) {
      continue;
    }
    if (addr < start || addr >= end) continue;
    std::string path = line + path_pos;
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    std::printf("%s\t%s\t%" PRIx64 "\t%" PRIxPTR "\n", name, path.c_str(), addr - start + offset,
                addr);
    break;
  }
  std::fclose(maps);
}

template <typename F>
const void* MemberAddress(F f) {
  const void* p;
  std::memcpy(&p, &f, sizeof(p));  // non-virtual member pointer: first word is the address
  return p;
}

int main(int argc, char** argv) {
  PrintLocation("sym_c_function", reinterpret_cast<const void*>(&sym_c_function));
  PrintLocation("Worker<int>::Run", MemberAddress(&symtest::Worker<int>::Run));
  PrintLocation("WithCold", reinterpret_cast<const void*>(&symtest::WithCold));
  PrintLocation("InlineCaller", reinterpret_cast<const void*>(&symtest::InlineCaller));
  PrintLocation("CallLambda", reinterpret_cast<const void*>(&CallLambda));
  PrintLocation("InlinedLambdaCaller", reinterpret_cast<const void*>(&symtest::InlinedLambdaCaller));
  PrintLocation("main", reinterpret_cast<const void*>(&main));
#ifdef SYM_WITH_LIB
  PrintLocation("sym_lib_function", reinterpret_cast<const void*>(&sym_lib_function));
#endif
  std::fflush(stdout);
  if (argc > 1 && std::strcmp(argv[1], "wait") == 0) {
    char c;
    while (read(0, &c, 1) > 0) {
    }
  } else if (argc > 2 && std::strcmp(argv[1], "spin") == 0) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(
                                                      static_cast<int>(std::atof(argv[2]) * 1000));
    symtest::Worker<int> worker;
    while (std::chrono::steady_clock::now() < end) {
      for (int i = 0; i < 1000; ++i) {
        sym_c_function(i);
        worker.Run(i);
        symtest::WithCold(i);
        symtest::InlineCaller(i % 64);
        CallLambda(i);
#ifdef SYM_WITH_LIB
        sym_lib_function(i);
#endif
      }
    }
  }
  return symtest::WithCold(argc) > 0 ? 0 : 1;
}
