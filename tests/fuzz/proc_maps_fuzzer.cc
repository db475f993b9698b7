// libFuzzer target for sampler/proc_maps.h's ParseProcMaps, the reader of /proc/PID/maps when
// `record -p` attaches (whose paths are file names: any bytes but '/' and NUL). Arbitrary text
// either parses into entries whose ranges are non-empty (end above start: a mapping's length is
// end - start) or fails with one line naming the line, its bytes escaped and capped.
// Seeds (corpus/proc_maps_fuzzer/): a real process's maps (paths with spaces, "(deleted)",
// [vdso], anonymous mappings), and lines with a backwards range and control bytes.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "base/text_escape.h"
#include "sampler/proc_maps.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using nativeprof::fuzz::Check;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<nativeprof::sampler::ProcMapsEntry>> entries =
      nativeprof::sampler::ParseProcMaps(text);
  if (!entries.ok()) {
    nativeprof::fuzz::CheckEscapedMessage(entries.status().message(), "malformed maps line ",
                                          64 + 4 * nativeprof::kMaxQuotedBytes);
    return 0;
  }
  for (const nativeprof::sampler::ProcMapsEntry& e : *entries) {
    Check(e.end_avma > e.start_avma);
    Check(e.path.size() <= size);
  }
  return 0;
}
