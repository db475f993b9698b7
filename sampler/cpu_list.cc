#include "sampler/cpu_list.h"

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_util.h"
#include "base/text_escape.h"

namespace nativeprof::sampler {

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> cpus;
  for (absl::string_view part :
       absl::StrSplit(absl::StripAsciiWhitespace(text), ',', absl::SkipEmpty())) {
    // Exactly "N" or "N-M": splitting into a pair would silently drop a third piece ("0-3-5")
    // and read "0-" or "1--2" as a single CPU.
    std::vector<absl::string_view> range = absl::StrSplit(part, '-');
    int lo = 0, hi = 0;
    if (range.size() > 2 || !absl::SimpleAtoi(range[0], &lo) ||
        (range.size() == 2 && !absl::SimpleAtoi(range[1], &hi))) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad CPU list '", EscapeForMessage(text), "'"));
    }
    if (range.size() == 1) hi = lo;
    if (lo < 0 || hi < lo || hi > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad CPU range in '", EscapeForMessage(text), "'"));
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) return absl::InvalidArgumentError("empty CPU list");
  return cpus;
}

std::vector<int> OnlineCpus() {
  absl::StatusOr<std::string> text = ReadSmallFile("/sys/devices/system/cpu/online");
  if (text.ok()) {
    absl::StatusOr<std::vector<int>> cpus = ParseCpuList(*text);
    if (cpus.ok()) return *cpus;
  }
  std::vector<int> cpus;
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < (n > 0 ? n : 1); ++i) cpus.push_back(static_cast<int>(i));
  return cpus;
}

}  // namespace nativeprof::sampler
