// Status propagation macros. Debian's Abseil (20220623) ships neither ABSL_RETURN_IF_ERROR nor
// ASSIGN_OR_RETURN, so nativeprof defines its own. Usable from any thread; not signal-safe.
#ifndef NATIVEPROF_BASE_STATUS_MACROS_H_
#define NATIVEPROF_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define NP_STATUS_CONCAT_INNER_(a, b) a##b
#define NP_STATUS_CONCAT_(a, b) NP_STATUS_CONCAT_INNER_(a, b)

// NP_RETURN_IF_ERROR(expr): returns the absl::Status of `expr` from the enclosing function when it
// is not OK.
#define NP_RETURN_IF_ERROR(expr)                                   \
  do {                                                             \
    const ::absl::Status np_status_ = ::nativeprof::AsStatus(expr); \
    if (!np_status_.ok()) return np_status_;                       \
  } while (0)

// NP_ASSIGN_OR_RETURN(lhs, expr): evaluates the StatusOr `expr`; returns its status on error,
// otherwise moves the value into `lhs` (which may be a declaration such as `auto x`).
#define NP_ASSIGN_OR_RETURN(lhs, expr) \
  NP_ASSIGN_OR_RETURN_IMPL_(NP_STATUS_CONCAT_(np_statusor_, __LINE__), lhs, expr)
#define NP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).status();  \
  lhs = std::move(tmp).value()

namespace nativeprof {
inline const absl::Status& AsStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_STATUS_MACROS_H_
