// Checks shared by the fuzz targets. A failed check prints where it failed and aborts, which
// libFuzzer reports as a crash and saves the input for.
#ifndef NATIVEPROF_TESTS_FUZZ_FUZZ_CHECKS_H_
#define NATIVEPROF_TESTS_FUZZ_FUZZ_CHECKS_H_

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace nativeprof::fuzz {

inline void Check(bool condition, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) {
  if (!condition) {
    std::fprintf(stderr, "%s:%d: check failed\n", file, line);
    std::abort();
  }
}

// An error a reader returned for arbitrary input: it starts with `prefix`, is at most `max_size`
// bytes, and holds no control byte (the bytes it quotes went through EscapeForMessage).
inline void CheckEscapedMessage(absl::string_view message, absl::string_view prefix,
                                size_t max_size, const char* file = __builtin_FILE(),
                                int line = __builtin_LINE()) {
  Check(absl::StartsWith(message, prefix), file, line);
  Check(message.size() <= max_size, file, line);
  for (char c : message) {
    const auto b = static_cast<unsigned char>(c);
    Check(b >= 0x20 && b != 0x7f, file, line);
  }
}

}  // namespace nativeprof::fuzz

#endif  // NATIVEPROF_TESTS_FUZZ_FUZZ_CHECKS_H_
