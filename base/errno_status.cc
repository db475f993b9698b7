#include "base/errno_status.h"


namespace nativeprof {

absl::Status ErrnoError(absl::string_view what) { return ErrnoError(errno, what); }

absl::Status ErrnoError(int err, absl::string_view what) {
  // ErrnoToStatus appends ": <strerror text>" itself.
  return absl::ErrnoToStatus(err, what);
}

}  // namespace nativeprof
