// libFuzzer target for output/folded_reader.h, the reader of every folded file `convert`,
// `report` and `diff` are given (any file a user names, binary ones included):
//   1. an error is one short line, "line N: ...", with the quoted bytes escaped (no control
//      byte, at most kMaxQuotedBytes of input quoted);
//   2. a parsed profile has in-range frame indexes and a sample total within kMaxFoldedTotal, and
//      renders back (RenderFolded) to text that parses to the same total;
//   3. the text reports and the diff table over it (sums, shares, intervals) do not crash;
//   4. `report --by module --hide ... --focus ...` over it (module keys of hostile names, the
//      filters, the JSON and markdown renderers) does not crash, and hiding keeps the total.
// Seeds (corpus/folded_reader_fuzzer/): a recorded profile with kinds and threads, annotated
// frames, counts at the 64-bit limit, blank and CRLF lines, and a binary file's first bytes;
// regress-* are inputs that once failed (regress-blank-thread-no-frames: a thread named only by
// carriage returns, no frames, was written back as a line with no stack).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "base/text_escape.h"
#include "output/diff_report.h"
#include "output/folded_reader.h"
#include "output/folded_writer.h"
#include "output/name_regex.h"
#include "output/report_json.h"
#include "output/report_markdown.h"
#include "output/report_model.h"
#include "output/text_report.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using nativeprof::fuzz::Check;

uint64_t Total(const nativeprof::symbolize::Profile& profile) {
  uint64_t total = 0;
  for (const auto& s : profile.stacks) {
    Check(!__builtin_add_overflow(total, s.samples, &total) && total <= nativeprof::output::kMaxFoldedTotal);
    for (uint32_t f : s.frames) Check(f < profile.frames.size());
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<nativeprof::symbolize::Profile> profile = nativeprof::output::ParseFolded(text);
  if (!profile.ok()) {
    // Fixed text, a line number and one quote of at most 80 bytes, 4 characters each escaped.
    nativeprof::fuzz::CheckEscapedMessage(profile.status().message(), "line ",
                                          200 + 4 * nativeprof::kMaxQuotedBytes);
    return 0;
  }
  const uint64_t total = Total(*profile);
  absl::StatusOr<nativeprof::symbolize::Profile> again =
      nativeprof::output::ParseFolded(nativeprof::output::RenderFolded(*profile));
  Check(again.ok());
  Check(Total(*again) == total);
  (void)nativeprof::output::RenderTopFunctions(*profile, 5).size();
  (void)nativeprof::output::RenderCallTree(*profile, 4, 0.5).size();
  const nativeprof::output::DiffResult diff =
      nativeprof::output::DiffProfiles(*profile, *again, 0.99);
  (void)nativeprof::output::RenderDiffTable(diff, 5).size();

  static const auto* hide = new nativeprof::output::NameRegex(
      *nativeprof::output::NameRegex::Compile("^<?&?(core|alloc|std)::"));
  static const auto* focus =
      new nativeprof::output::NameRegex(*nativeprof::output::NameRegex::Compile("a|_\\[k\\]"));
  nativeprof::output::ReportSpec spec;
  spec.top_n = 5;
  spec.hide = hide;
  spec.by = nativeprof::output::ReportKey::kModule;
  const nativeprof::output::ReportModel hidden = nativeprof::output::BuildReport(*profile, spec);
  Check(hidden.functions.samples == total);
  spec.focus = focus;
  const nativeprof::output::ReportModel model = nativeprof::output::BuildReport(*profile, spec);
  Check(model.functions.samples <= total);
  const nlohmann::json no_metadata;
  (void)nativeprof::output::RenderReportJson(model, "in.folded", no_metadata).size();
  (void)nativeprof::output::RenderReportMarkdown(model, "in.folded", no_metadata).size();
  return 0;
}
