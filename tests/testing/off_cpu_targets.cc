#include "tests/testing/off_cpu_targets.h"

#include <stdlib.h>

#include <vector>

#include "gtest/gtest.h"

namespace nativeprof::testing {

std::unique_ptr<BackgroundProcess> StartSleepingTarget(bool in_main) {
  ::setenv("OFFCPU_START_DELAY_MS", "60000", 1);
  if (in_main) ::setenv("OFFCPU_START_DELAY_IN_MAIN", "1", 1);
  auto target = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{TargetPath("offcpu_workload"), "block", "1", "10"},
      /*capture_stdout=*/true);
  ::unsetenv("OFFCPU_START_DELAY_MS");
  ::unsetenv("OFFCPU_START_DELAY_IN_MAIN");
  EXPECT_EQ(target->ReadLine(), "ready");
  return target;
}

bool CanReadBlockedStacks(const std::string& pid) {
  return !ReadFileOrEmpty("/proc/" + pid + "/task/" + pid + "/syscall").empty();
}

}  // namespace nativeprof::testing
