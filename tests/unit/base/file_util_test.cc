#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::testing::HasSubstr;

TEST(ReadSmallFileTest, ReadsUpToTheLimitAndRefusesMore) {
  const std::string path = MakeTempDir() + "/f";
  NP_ASSERT_OK(WriteFileAtomically(path, "0123456789"));
  NP_ASSERT_OK_AND_ASSIGN(std::string whole, ReadSmallFile(path, 10));
  EXPECT_EQ(whole, "0123456789");
  absl::StatusOr<std::string> over = ReadSmallFile(path, 9);
  EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
  EXPECT_THAT(over.status().message(), HasSubstr(path));
  EXPECT_THAT(over.status().message(), HasSubstr("9-byte limit"));
}

TEST(ReadSmallFileTest, SparseFileOfATerabyteIsRefusedBeforeAllocating) {
  // stat() says 1 TiB: sizing the buffer from it first would throw bad_alloc (or fault in pages).
  const std::string path = MakeTempDir() + "/sparse";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 40), 0);
  ::close(fd);
  EXPECT_TRUE(absl::IsResourceExhausted(ReadSmallFile(path).status()));
}

TEST(ReadSmallFileTest, EndlessFileStopsAtTheLimit) {
  // /dev/zero reports no size and never ends, as a /proc file that kept growing would.
  absl::StatusOr<std::string> zeros = ReadSmallFile("/dev/zero", 100000);
  EXPECT_TRUE(absl::IsResourceExhausted(zeros.status())) << zeros.status();
}

TEST(ReadSmallFileTest, FifoWithoutWriterReadsEmptyInsteadOfBlocking) {
  const std::string path = MakeTempDir() + "/perf-1.map";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  NP_ASSERT_OK_AND_ASSIGN(std::string text, ReadSmallFile(path));
  EXPECT_EQ(text, "");
}

}  // namespace
}  // namespace nativeprof
