#include "output/name_regex.h"

#include "absl/status/status.h"

namespace nativeprof::output {

// Why POSIX ERE and not std::regex or RE2: Debian's Abseil has no regex, RE2 is not a dependency,
// and libstdc++'s std::regex matches by recursive backtracking - a demangled C++ template name
// runs to thousands of bytes, and std::regex_search on such input can exhaust the stack
// (GCC bug 86164). glibc's regexec runs without recursion on the input length and reports
// compile errors as readable text. ERE covers what the profiling recipes use:
// alternation, anchors, classes, "::" literally.
void NameRegex::Free::operator()(regex_t* re) const {
  regfree(re);
  delete re;
}

absl::StatusOr<NameRegex> NameRegex::Compile(const std::string& pattern) {
  auto re = std::unique_ptr<regex_t, Free>(new regex_t);
  const int rc = regcomp(re.get(), pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char message[256];
    regerror(rc, re.get(), message, sizeof(message));
    delete re.release();  // regcomp failed: there is nothing for regfree to free
    return absl::InvalidArgumentError(message);
  }
  return NameRegex(pattern, std::move(re));
}

bool NameRegex::Matches(const std::string& name) const {
  return regexec(re_.get(), name.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace nativeprof::output
