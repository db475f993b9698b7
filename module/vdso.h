// Reads the vdso's ELF image, which no file holds: from a live process's memory, or nativeprof's
// own (the same image for every process of the same ABI on one kernel). The one vdso reader for
// unwind/ and symbolize/. Any thread; reads /proc.
#ifndef NATIVEPROF_MODULE_VDSO_H_
#define NATIVEPROF_MODULE_VDSO_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace nativeprof::module {

// A vdso larger than this is not one (they are 2-3 pages); the bound sizes the read buffer.
inline constexpr uint64_t kMaxVdsoBytes = uint64_t{1} << 20;

// The vdso of process `pid`, mapped at avma [start_avma, end_avma), from /proc/PID/mem.
// Errors: kInvalidArgument for an empty or implausibly large range, else the open/read errno
// (kNotFound for a process gone, kPermissionDenied without ptrace access), kDataLoss if short.
absl::StatusOr<std::string> ReadProcessVdso(int32_t pid, uint64_t start_avma, uint64_t end_avma);

// nativeprof's own vdso, as /proc/self/maps places it. Errors: kNotFound without one.
absl::StatusOr<std::string> ReadOwnVdso();

// The vdso of `pid` (avma [start_avma, end_avma)) if readable, else our own.
// Errors: kNotFound when neither can be read.
absl::StatusOr<std::string> ReadVdsoImage(int32_t pid, uint64_t start_avma, uint64_t end_avma);

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_VDSO_H_
