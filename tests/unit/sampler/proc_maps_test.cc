#include "sampler/proc_maps.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

using ::testing::HasSubstr;

TEST(ParseProcMapsTest, ParsesRangesPermissionsAndPathsWithSpaces) {
  NP_ASSERT_OK_AND_ASSIGN(
      std::vector<ProcMapsEntry> entries,
      ParseProcMaps("55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1234   /opt/my app/bin\n"
                    "7ffd1a1f0000-7ffd1a1f2000 r-xp 00000000 00:00 0   [vdso]\n"));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].start_avma, 0x55d0c0a00000u);
  EXPECT_EQ(entries[0].end_avma, 0x55d0c0a21000u);
  EXPECT_EQ(entries[0].prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
  EXPECT_EQ(entries[0].file_offset, 0x2000u);
  EXPECT_EQ(entries[0].dev_major, 0xfdu);
  EXPECT_EQ(entries[0].inode, 1234u);
  EXPECT_EQ(entries[0].path, "/opt/my app/bin");
  EXPECT_EQ(entries[1].path, "[vdso]");
}

TEST(ParseProcMapsTest, RangeThatIsEmptyOrBackwardsIsMalformed) {
  // end - start is a mapping's length: 0, or wrapped to nearly 2^64 when end < start.
  for (const char* line : {"2000-1000 r-xp 00000000 00:00 0 /x\n",
                           "1000-1000 r-xp 00000000 00:00 0 /x\n"}) {
    absl::StatusOr<std::vector<ProcMapsEntry>> entries = ParseProcMaps(line);
    EXPECT_EQ(entries.status().code(), absl::StatusCode::kDataLoss) << line;
    EXPECT_THAT(entries.status().message(), HasSubstr("malformed maps line 1: ")) << line;
  }
}

TEST(ParseProcMapsTest, MalformedLineIsQuotedEscaped) {
  absl::StatusOr<std::vector<ProcMapsEntry>> entries =
      ParseProcMaps("1000-2000 r-xp 0 00:00\x1b[2J\n");
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().message(), "malformed maps line 1: 1000-2000 r-xp 0 00:00\\x1b[2J");
}

// A running process has not ended; one that exited and waits to be reaped (a zombie) has, and
// so has one that is gone.
TEST(ProcessHasEndedTest, RunningZombieAndGone) {
  EXPECT_FALSE(ProcessHasEnded(::getpid()));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  EXPECT_FALSE(ProcessHasEnded(child));
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  siginfo_t info{};
  // Waits for the end without reaping: the child stays a zombie.
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(ProcessHasEnded(child));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(ProcessHasEnded(child));
}

}  // namespace
}  // namespace nativeprof::sampler
