#include "base/errno_status.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace nativeprof {

absl::Status ErrnoError(absl::string_view what) { return ErrnoError(errno, what); }

absl::Status ErrnoError(int err, absl::string_view what) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, ": ", std::strerror(err)));
}

}  // namespace nativeprof
