// Targets of the off-CPU attach tests, shared by the parallel and the serial test binaries.
#ifndef NATIVEPROF_TESTS_TESTING_OFF_CPU_TARGETS_H_
#define NATIVEPROF_TESTS_TESTING_OFF_CPU_TARGETS_H_

#include <memory>
#include <string>

#include "tests/testing/test_support.h"

namespace nativeprof::testing {

// offcpu_workload started to sleep in main for far longer than a recording (it is killed at the
// end), with its "ready" read; `in_main`: in nanosleep called from main itself, else in sleep_ms.
std::unique_ptr<BackgroundProcess> StartSleepingTarget(bool in_main);

// Attaching reads a blocked thread's stack from /proc/PID/task/TID/syscall and its memory,
// which need ptrace-attach rights over it.
bool CanReadBlockedStacks(const std::string& pid);

inline constexpr char kNoPtraceRights[] =
    "no ptrace-attach rights over the target: /proc/PID/task/TID/syscall is unreadable, so no "
    "stack can be read";

}  // namespace nativeprof::testing

#endif  // NATIVEPROF_TESTS_TESTING_OFF_CPU_TARGETS_H_
