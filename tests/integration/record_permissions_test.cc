// `record` run as an unprivileged user (root drops to nobody with setpriv): the kernel then
// refuses kernel-stack sampling (perf_event_paranoid >= 2) and large ring buffers (locked-memory
// limit), and nativeprof must say what the setting is and what to do - and keep working where it can.
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;

// argv run as nobody, with the locked-memory rlimit set to `memlock` bytes (-1 = unchanged).
std::vector<std::string> AsNobody(std::vector<std::string> argv, long memlock = -1) {
  std::vector<std::string> prefix;
  if (memlock >= 0) {
    prefix = {"prlimit", "--memlock=" + std::to_string(memlock) + ":" + std::to_string(memlock)};
  }
  prefix.insert(prefix.end(), {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"});
  prefix.insert(prefix.end(), argv.begin(), argv.end());
  return prefix;
}

class RecordPermissionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NP_SKIP_IF_NO_PERF();
    if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to the nobody user";
    dir_ = MakeTempDir();
    if (RunCommand({"chmod", "777", dir_}).exit_code != 0 ||
        RunCommand(AsNobody({"test", "-x", NativeprofBinary()})).exit_code != 0 ||
        RunCommand(AsNobody({"test", "-x", TargetPath("fp_split")})).exit_code != 0) {
      GTEST_SKIP() << "setpriv/prlimit missing, or nobody cannot reach the build directory";
    }
  }
  std::string dir_;
};

TEST_F(RecordPermissionsTest, ParanoidKernelFallsBackToUserStacksAndSaysWhy) {
  std::string paranoid = ReadFileOrEmpty("/proc/sys/kernel/perf_event_paranoid");
  if (paranoid.empty() || std::stoi(paranoid) < 2) {
    GTEST_SKIP() << "perf_event_paranoid < 2 lets unprivileged users sample the kernel";
  }
  if (std::stoi(paranoid) > 2) GTEST_SKIP() << "perf_event_paranoid > 2 refuses all perf events";
  std::string folded = dir_ + "/user.folded";
  CommandResult r = RunCommand(AsNobody(
      {NativeprofBinary(), "record", "-o", folded, "--", TargetPath("fp_split"), "300"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("kernel stacks are not sampled: /proc/sys/kernel/"
                               "perf_event_paranoid is 2"));
  EXPECT_THAT(r.err, HasSubstr("CAP_PERFMON"));
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  EXPECT_GT(p.Self("heavy_function"), 50u);
  for (const FoldedLine& l : p.lines()) {
    for (const std::string& f : l.frames) EXPECT_THAT(f, ::testing::Not(HasSubstr("_[k]")));
  }
}

TEST_F(RecordPermissionsTest, RingBufferOverTheLockLimitSaysWhatFits) {
  CommandResult r = RunCommand(AsNobody({NativeprofBinary(), "record", "--no-counters", "-m",
                                         "1024", "-o", dir_ + "/big.folded", "--",
                                         TargetPath("fp_split"), "100"},
                                        /*memlock=*/0));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/proc/sys/kernel/perf_event_mlock_kb is"));
  EXPECT_THAT(r.err, HasSubstr("use -m "));
  EXPECT_EQ(ReadFileOrEmpty(dir_ + "/big.folded"), "");
}

// --off-cpu samples context switches, which happen in kernel mode: with paranoid 2 the kernel
// refuses them, and record must stop before the command runs, with one line naming the setting.
TEST_F(RecordPermissionsTest, OffCpuRefusedFailsBeforeTheTargetRunsAndSaysWhichSetting) {
  std::string paranoid = ReadFileOrEmpty("/proc/sys/kernel/perf_event_paranoid");
  if (paranoid.empty() || std::stoi(paranoid) != 2) {
    GTEST_SKIP() << "needs perf_event_paranoid 2 (user-only sampling allowed, kernel refused)";
  }
  const std::string marker = dir_ + "/ran";
  CommandResult r = RunCommand(AsNobody({NativeprofBinary(), "record", "--off-cpu", "-o",
                                         dir_ + "/off.folded", "--", "touch", marker}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--off-cpu"));
  EXPECT_THAT(r.err, HasSubstr("perf_event_paranoid"));
  EXPECT_TRUE(ReadFileOrEmpty(marker).empty() && RunCommand({"test", "-e", marker}).exit_code != 0)
      << "the command must not have run";
}

}  // namespace
}  // namespace nativeprof::testing
