// A compiled regular expression over frame names, for `report --focus` / `--hide`. POSIX
// extended syntax (regcomp(3) with REG_EXTENDED | REG_NOSUB), searched anywhere in the name
// unless anchored with ^ / $. Immutable after Compile(); any thread may call Matches() (glibc's
// regexec does not modify the pattern).
#ifndef NATIVEPROF_OUTPUT_NAME_REGEX_H_
#define NATIVEPROF_OUTPUT_NAME_REGEX_H_

#include <regex.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace nativeprof::output {

class NameRegex {
 public:
  // Compile()
  //
  // Errors: kInvalidArgument with regerror's text (e.g. "Unmatched ( or \\(") when `pattern` is
  // not a valid extended regular expression.
  static absl::StatusOr<NameRegex> Compile(const std::string& pattern);

  // True when the pattern matches somewhere in `name`.
  bool Matches(const std::string& name) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Free {
    void operator()(regex_t* re) const;
  };
  NameRegex(std::string pattern, std::unique_ptr<regex_t, Free> re)
      : pattern_(std::move(pattern)), re_(std::move(re)) {}

  std::string pattern_;
  std::unique_ptr<regex_t, Free> re_;
};

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_NAME_REGEX_H_
