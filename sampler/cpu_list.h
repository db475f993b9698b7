// Online CPUs, from /sys/devices/system/cpu/online ("0-3,5"). Any thread.
#ifndef NATIVEPROF_SAMPLER_CPU_LIST_H_
#define NATIVEPROF_SAMPLER_CPU_LIST_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof::sampler {

// Parses a kernel CPU list such as "0-3,5". Errors: kInvalidArgument.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);
// The online CPUs; falls back to 0..nproc-1 if sysfs is unreadable.
std::vector<int> OnlineCpus();

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_CPU_LIST_H_
