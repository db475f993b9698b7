// A `record` killed with SIGKILL while it writes its output leaves its temporary file behind (no
// code runs after SIGKILL); the next run that writes the same output removes it.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

TEST(RecordKilledTest, NextRunRemovesTheTemporaryFileASigkillLeft) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  const std::string out = dir + "/out.folded";
  const std::vector<std::string> record = {NativeprofBinary(), "record", "--call-graph", "fp",
                                           "-o", out, "--", TargetPath("fp_split"), "300"};
  // Without a cache the output's is the run's first rename (a cache entry's would come first).
  std::vector<std::string> argv = {"env", "NATIVEPROF_CACHE_DIR=off"};
  argv.insert(argv.end(), record.begin(), record.end());
  pid_t pid = -1;
  CommandResult killed = RunCommandKilledAtFirstRename(argv, &pid);
  if (killed.exit_code == -1) GTEST_SKIP() << killed.err;
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.err;
  const std::string temp = out + ".tmp." + std::to_string(pid);
  EXPECT_EQ(FilesIn(dir), std::set<std::string>{"out.folded.tmp." + std::to_string(pid)});
  // The whole profile was in it, a rename away from being the output.
  EXPECT_GT(FoldedProfile::Parse(ReadFileOrEmpty(temp)).Self("heavy_function"), 0u);

  CommandResult again = RunCommand(record);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(FilesIn(dir), (std::set<std::string>{"out.folded", "out.folded.json"}));
  const FoldedProfile profile = FoldedProfile::Parse(ReadFileOrEmpty(out));
  EXPECT_TRUE(profile.errors().empty());
  EXPECT_GT(profile.Self("heavy_function"), 0u) << again.err;
}

}  // namespace
}  // namespace nativeprof::testing
