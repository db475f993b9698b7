#include "sampler/cpu_list.h"

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_util.h"

namespace nativeprof::sampler {

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> cpus;
  for (absl::string_view part :
       absl::StrSplit(absl::StripAsciiWhitespace(text), ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> range = absl::StrSplit(part, '-');
    int lo = 0, hi = 0;
    if (!absl::SimpleAtoi(range.first, &lo)) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU list '", text, "'"));
    }
    hi = lo;
    if (!range.second.empty() && !absl::SimpleAtoi(range.second, &hi)) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU list '", text, "'"));
    }
    if (lo < 0 || hi < lo || hi > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU range in '", text, "'"));
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
