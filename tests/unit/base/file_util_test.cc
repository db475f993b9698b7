#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

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

// /proc's mode bits let root write (access() says yes), but it takes no new file: the check
// creates one where the output will go, so the run is refused before the command starts.
TEST(SameRegularFileTest, OneFileHoweverNamedButNoDevicesOrMissingFiles) {
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/a", "x"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/b", "x"));
  ASSERT_EQ(::link((dir + "/a").c_str(), (dir + "/hard").c_str()), 0);
  EXPECT_TRUE(SameRegularFile(dir + "/a", dir + "/hard"));
  EXPECT_TRUE(SameRegularFile(dir + "/a", dir + "/../" +
                                              std::filesystem::path(dir).filename().string() +
                                              "/a"));
  EXPECT_FALSE(SameRegularFile(dir + "/a", dir + "/b"));
  EXPECT_FALSE(SameRegularFile(dir + "/a", dir + "/missing"));
  EXPECT_FALSE(SameRegularFile(dir + "/missing", dir + "/missing"));
  EXPECT_FALSE(SameRegularFile("/dev/null", "/dev/null"));
  EXPECT_FALSE(RegularFileIdOf(dir).has_value());
  EXPECT_EQ(RegularFileIdOf(dir + "/a"), RegularFileIdOf(dir + "/hard"));
}

// `record -o ./np -- true` replaced nativeprof itself with a profile: programs, libraries and
// scripts are refused from their first bytes; profiles, other files, streams and new paths pass.
TEST(CheckNotOverwritingNonProfileTest, ProgramsAndScriptsAreRefused) {
  const std::string dir = MakeTempDir();
  std::filesystem::copy_file("/bin/true", dir + "/prog");
  std::filesystem::create_symlink(dir + "/prog", dir + "/link.folded");
  NP_ASSERT_OK(WriteFileAtomically(dir + "/run.sh", "#!/bin/sh\necho hi\n"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/short", "\x7f" "ELF"));
  // An x86-64 object file's header as far as e_type (ET_REL, little-endian).
  NP_ASSERT_OK(WriteFileAtomically(
      dir + "/a.o", std::string("\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0", 18)));
  for (const auto& [name, what] : std::vector<std::pair<std::string, std::string>>{
           {"prog", "an ELF executable"}, {"link.folded", "an ELF executable"},
           {"run.sh", "a script (#!)"}, {"short", "an ELF file"}, {"a.o", "an ELF object file"}}) {
    const absl::Status st = CheckNotOverwritingNonProfile(dir + "/" + name);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << name;
    EXPECT_THAT(std::string(st.message()), HasSubstr(dir + "/" + name + " is " + what))
        << name;
    EXPECT_THAT(std::string(st.message()), HasSubstr("not a profile")) << name;
  }
  NP_ASSERT_OK(WriteFileAtomically(dir + "/p.folded", "app;main 3\n"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/p.folded.json", "{}"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/empty", ""));
  for (const std::string& path : {dir + "/p.folded", dir + "/p.folded.json", dir + "/empty",
                                  dir + "/missing", dir, std::string("/dev/null")}) {
    NP_EXPECT_OK(CheckNotOverwritingNonProfile(path)) << path;
  }
}

TEST(CheckOutputWritableTest, DirectoryThatTakesNoNewFileIsRefusedEvenForRoot) {
  const absl::Status st = CheckOutputWritable("/proc/nativeprof-test.folded");
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("/proc"));
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(CheckOutputWritable(dir + "/out.folded"));
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the probe file was left behind";
}

// Renaming a new file over the output would replace a symlink with a file, and /dev/null (as
// root) with a regular file: the link is followed and a special file written into.
TEST(WriteFileAtomicallyTest, FollowsSymlinksAndWritesIntoSpecialFiles) {
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/real", "old"));
  ASSERT_EQ(::symlink("real", (dir + "/link").c_str()), 0);
  NP_ASSERT_OK(CheckOutputWritable(dir + "/link"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/link", "new"));
  struct stat st;
  ASSERT_EQ(::lstat((dir + "/link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  NP_ASSERT_OK_AND_ASSIGN(std::string real, ReadSmallFile(dir + "/real", 100));
  EXPECT_EQ(real, "new");
  // A dangling link: the file it names is created.
  ASSERT_EQ(::symlink("later", (dir + "/dangling").c_str()), 0);
  NP_ASSERT_OK(WriteFileAtomically(dir + "/dangling", "made"));
  NP_ASSERT_OK_AND_ASSIGN(std::string later, ReadSmallFile(dir + "/later", 100));
  EXPECT_EQ(later, "made");

  ASSERT_EQ(::symlink("/dev/null", (dir + "/null").c_str()), 0);
  NP_ASSERT_OK(CheckOutputWritable("/dev/null"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/null", "gone"));
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  NP_ASSERT_OK(WriteFileAtomically(fifo, "through"));
  char buf[16] = {};
  EXPECT_EQ(::read(reader, buf, sizeof(buf)), 7);
  EXPECT_EQ(std::string(buf), "through");
  ::close(reader);
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(StaleTempFileTest, OnlyTheExactNameOfADeadWriterIsStale) {
  const std::string dead = std::to_string(testing::ReapedPid());
  const std::string live = std::to_string(::getppid());
  const std::string self = std::to_string(::getpid());
  EXPECT_TRUE(IsStaleTempFile("out.folded.tmp." + dead, "out.folded"));
  EXPECT_TRUE(IsStaleTempFile("out.folded.tmp." + dead, ""));  // any output
  EXPECT_FALSE(IsStaleTempFile("out.folded.tmp." + live, "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("out.folded.tmp." + self, "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("other.folded.tmp." + dead, "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("xout.folded.tmp." + dead, "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("out.folded.tmp." + dead + "x", "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("out.folded.tmp.0" + dead, "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("out.folded.tmp.-" + dead, "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("out.folded.tmp.", "out.folded"));
  EXPECT_FALSE(IsStaleTempFile("out.folded.tmp.99999999999", "out.folded"));
  EXPECT_FALSE(IsStaleTempFile(".tmp." + dead, ""));
  EXPECT_FALSE(IsStaleTempFile("out.folded", "out.folded"));
}

TEST(StaleTempFileTest, WriteRemovesDeadWritersTempFilesOfThatOutputOnly) {
  const std::string dir = MakeTempDir();
  const std::string out = dir + "/out.folded";
  const std::string dead = std::to_string(testing::ReapedPid());
  const std::string live = std::to_string(::getppid());
  for (const std::string& name :
       {"out.folded.tmp." + dead, "out.folded.tmp." + live, "other.folded.tmp." + dead,
        "out.folded.tmp." + dead + ".bak"}) {
    NP_ASSERT_OK(WriteFileAtomically(dir + "/" + name, "partial"));
  }
  // A directory and a symlink under a stale name are not files this writer made.
  const std::string dead_dir = dir + "/out.folded.tmp." + std::to_string(testing::ReapedPid());
  ASSERT_EQ(::mkdir(dead_dir.c_str(), 0700), 0);
  const std::string dead_link = dir + "/out.folded.tmp." + std::to_string(testing::ReapedPid());
  ASSERT_EQ(::symlink(out.c_str(), dead_link.c_str()), 0);

  NP_ASSERT_OK(WriteFileAtomically(out, "app;main 1\n"));
  EXPECT_EQ(testing::ReadFileOrEmpty(out), "app;main 1\n");
  EXPECT_NE(::access((dir + "/out.folded.tmp." + dead).c_str(), F_OK), 0) << "stale: removed";
  for (const std::string& kept :
       {"out.folded.tmp." + live, "other.folded.tmp." + dead, "out.folded.tmp." + dead + ".bak"}) {
    EXPECT_EQ(testing::ReadFileOrEmpty(dir + "/" + kept), "partial") << kept;
  }
  struct stat st;
  EXPECT_EQ(::lstat(dead_dir.c_str(), &st), 0);
  EXPECT_EQ(::lstat(dead_link.c_str(), &st), 0);
  EXPECT_EQ(RemoveStaleTempFiles(out), 0u);
}

}  // namespace
}  // namespace nativeprof
