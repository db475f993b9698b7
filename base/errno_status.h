// Turns errno into an absl::Status that names the failing call, its key arguments and the errno
// text, with the canonical code that absl::ErrnoToStatus picks (EACCES -> kPermissionDenied, ...).
#ifndef NATIVEPROF_BASE_ERRNO_STATUS_H_
#define NATIVEPROF_BASE_ERRNO_STATUS_H_

#include <cerrno>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace nativeprof {

// ErrnoError(what): reads errno at the call, so call it right after the failing syscall.
absl::Status ErrnoError(absl::string_view what);
absl::Status ErrnoError(int err, absl::string_view what);

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_ERRNO_STATUS_H_
