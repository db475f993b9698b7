// libFuzzer target for symbolize/perf_map.h, the reader of /tmp/perf-PID.map (which any local
// user can write for any PID). Arbitrary text is parsed; every symbol kept must respect the
// documented bounds (size 1 to kMaxPerfMapSymbolBytes, START + SIZE within 2^64, a name of 1 to
// kMaxPerfMapNameBytes), and lookups at and around each symbol's ends must return a symbol that
// covers the address, or none.
// Seeds (corpus/perf_map_fuzzer/): lines as V8 (--perf-basic-prof), the JVM (perf-map-agent) and
// .NET write them, with and without 0x, and overlapping and wrapping ranges.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "symbolize/perf_map.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using nativeprof::symbolize::SymbolTable;

using nativeprof::fuzz::Check;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const SymbolTable table = nativeprof::symbolize::ParsePerfMap(text);
  std::vector<uint64_t> probes;
  for (const SymbolTable::Symbol& s : table.symbols()) {
    Check(s.size >= 1 && s.size <= nativeprof::symbolize::kMaxPerfMapSymbolBytes);
    Check(s.size - 1 <= UINT64_MAX - s.start);
    const absl::string_view name = table.Name(s);
    Check(!name.empty() && name.size() <= nativeprof::symbolize::kMaxPerfMapNameBytes);
    if (probes.size() < 256) {
      probes.insert(probes.end(), {s.start, s.start - 1, s.start + s.size - 1, s.start + s.size});
    }
  }
  for (uint64_t avma : probes) {
    if (const SymbolTable::Symbol* s = table.Lookup(avma); s != nullptr) {
      Check(avma - s->start < s->size);
    }
  }
  return 0;
}
