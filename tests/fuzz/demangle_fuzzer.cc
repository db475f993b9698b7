// libFuzzer target for symbolize/demangle.h: any byte string through DemangleForDisplay and
// DemangleSymbol with both option settings, DemangleRust in both forms, and output's
// EscapeFoldedFrame over the demangled names.
// Checks the documented bounds: no crash, output at most ~1 MB, unknown names unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "output/folded_writer.h"
#include "symbolize/demangle.h"

namespace {

// Rust output stops at 1,000,000 bytes plus "{size limit reached}" and a short suffix; C++
// output is capped at 1,000,000 bytes; clone notation adds " [clone ]" around the input.
constexpr size_t kSlack = 64;

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t bound = 1000000 + 2 * size + kSlack;
  for (bool full : {false, true}) {
    nativeprof::symbolize::DemangleOptions options;
    options.full_names = full;
    std::string display = nativeprof::symbolize::DemangleForDisplay(input, options);
    Check(display.size() <= bound);
    std::string symbol = nativeprof::symbolize::DemangleSymbol(input, options);
    Check(symbol.size() <= bound);
    std::string folded = nativeprof::output::EscapeFoldedFrame(symbol);
    Check(folded.size() == symbol.size());
    Check(folded.find(';') == std::string::npos && folded.find('\n') == std::string::npos);
    std::optional<std::string> rust = nativeprof::symbolize::DemangleRust(input, !full);
    if (rust.has_value()) Check(rust->size() <= bound);
  }
  return 0;
}
