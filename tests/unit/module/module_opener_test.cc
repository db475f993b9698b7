// The opener: its candidate order (held fd, /proc/PID/map_files, /proc/PID/root, the path) and its
// identity check (build-id when the mapping has one, else inode and device).
#include "module/module_opener.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::module {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::TargetPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string BuildIdOf(const std::string& path) {
  auto image = ElfImage::Open(path);
  EXPECT_TRUE(image.ok()) << image.status();
  return image.ok() ? (*image)->build_id() : "";
}

// Moves `path` aside (its inode stays allocated, so the replacement cannot reuse the number) and
// puts a copy of `replacement` there.
void Replace(const std::string& path, const std::string& replacement) {
  std::filesystem::rename(path, path + ".old");
  std::filesystem::copy_file(replacement, path);
}

TEST(ModuleOpenerTest, CandidateOrder) {
  sampler::ModuleInfo info;
  info.path = "/usr/bin/prog (deleted)";
  info.first_pid = 42;
  EXPECT_THAT(
      CandidatePaths({.info = &info, .pid = 7, .start_avma = 0x1000, .end_avma = 0x3000}),
      ElementsAre("/proc/7/map_files/1000-3000", "/proc/42/root/usr/bin/prog", "/usr/bin/prog"));
  // After the target exited: no process to read map_files of.
  info.first_pid = 0;
  EXPECT_THAT(CandidatePaths({.info = &info}), ElementsAre("/usr/bin/prog"));
}

TEST(ModuleOpenerTest, IdentityByBuildIdWhenTheMappingHasOne) {
  sampler::ModuleInfo mapped;
  mapped.build_id = "12ab";
  mapped.inode = 5;  // ignored: the build-id decides
  EXPECT_TRUE(CheckIdentity(mapped, {.inode = 6, .build_id = "12ab"}).ok());
  absl::Status other = CheckIdentity(mapped, {.inode = 5, .build_id = "34cd"});
  EXPECT_TRUE(absl::IsFailedPrecondition(other));
  EXPECT_THAT(other.message(), HasSubstr("build-id 12ab was mapped, the file has 34cd"));
  EXPECT_TRUE(absl::IsFailedPrecondition(CheckIdentity(mapped, {.build_id = ""})));
  // Not parsed yet (a held fd): checked in full when it is opened.
  EXPECT_TRUE(CheckIdentity(mapped, {.inode = 6, .build_id = std::nullopt}).ok());
}

TEST(ModuleOpenerTest, IdentityByInodeAndDeviceOtherwise) {
  sampler::ModuleInfo mapped;
  mapped.dev = 0x801;
  mapped.inode = 5;
  EXPECT_TRUE(CheckIdentity(mapped, {.dev = 0x801, .inode = 5, .build_id = "34cd"}).ok());
  const std::optional<std::string> unread;  // a file not parsed: only inode and device compared
  EXPECT_TRUE(absl::IsFailedPrecondition(
      CheckIdentity(mapped, {.dev = 0x801, .inode = 6, .build_id = unread})));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      CheckIdentity(mapped, {.dev = 0x802, .inode = 5, .build_id = unread})));
  // Nothing to compare: a mapping from a record without an inode.
  EXPECT_TRUE(
      CheckIdentity(sampler::ModuleInfo(), {.dev = 1, .inode = 2, .build_id = unread}).ok());
}

TEST(ModuleOpenerTest, FileReplacedAfterMappingIsRefused) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/prog";
  std::filesystem::copy_file(TargetPath("sym_prog"), path);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  sampler::ModuleInfo by_inode;
  by_inode.path = path;
  by_inode.dev = st.st_dev;
  by_inode.inode = st.st_ino;
  sampler::ModuleInfo by_build_id;
  by_build_id.path = path;
  by_build_id.build_id = BuildIdOf(path);
  ASSERT_FALSE(by_build_id.build_id.empty());
  ASSERT_TRUE(OpenModuleImage({.info = &by_inode}).ok());
  ASSERT_TRUE(OpenModuleImage({.info = &by_build_id}).ok());

  Replace(path, TargetPath("sym_prog_O0"));
  auto image = OpenModuleImage({.info = &by_inode});
  EXPECT_TRUE(absl::IsFailedPrecondition(image.status())) << image.status();
  EXPECT_THAT(image.status().message(), HasSubstr("inode changed"));
  image = OpenModuleImage({.info = &by_build_id});
  EXPECT_TRUE(absl::IsFailedPrecondition(image.status())) << image.status();
  EXPECT_THAT(image.status().message(), HasSubstr("was mapped, the file has"));
}

TEST(ModuleOpenerTest, HeldFdComesFirst) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/prog";
  std::filesystem::copy_file(TargetPath("sym_prog"), path);
  const std::string mapped_build_id = BuildIdOf(path);
  sampler::ModuleInfo info;
  info.path = path;
  info.build_id = mapped_build_id;
  ScopedFd held = HoldModuleFd(info, /*pid=*/0, 0, 0);  // no map_files: by path, checked by fstat
  ASSERT_TRUE(held.valid());

  Replace(path, TargetPath("sym_prog_O0"));
  auto image = OpenModuleImage({.info = &info, .held_fd = held.get()});
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ((*image)->build_id(), mapped_build_id);
  EXPECT_EQ((*image)->name(), path) << "named by the module's path, not the candidate's";
  // Without it, the path holds another build, which is refused.
  EXPECT_TRUE(absl::IsFailedPrecondition(OpenModuleImage({.info = &info}).status()));
}

TEST(ModuleOpenerTest, MapFilesComeBeforeThePath) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/prog";
  std::filesystem::copy_file(TargetPath("sym_prog"), path);
  const std::string mapped_build_id = BuildIdOf(path);
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  const size_t size = 4096;
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  ASSERT_NE(map, MAP_FAILED);
  const uint64_t start = reinterpret_cast<uint64_t>(map);
  sampler::ModuleInfo info;
  info.path = path;  // no build-id, no inode: only the order decides which file is read
  Replace(path, TargetPath("sym_prog_O0"));
  const std::string map_files = CandidatePaths(
      {.info = &info, .pid = getpid(), .start_avma = start, .end_avma = start + size})[0];
  if (ScopedFd probe(open(map_files.c_str(), O_RDONLY | O_CLOEXEC)); !probe.valid()) {
    munmap(map, size);
    GTEST_SKIP() << "cannot open " << map_files
                 << " (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)";
  }
  auto image = OpenModuleImage(
      {.info = &info, .pid = getpid(), .start_avma = start, .end_avma = start + size});
  munmap(map, size);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ((*image)->build_id(), mapped_build_id);
}

TEST(ModuleOpenerTest, ModulesWithoutAFileAreNotOpened) {
  sampler::ModuleInfo info;
  for (const char* p : {"[vdso]", "[heap]", "//anon"}) {
    info.path = p;
    EXPECT_TRUE(absl::IsInvalidArgument(OpenModuleImage({.info = &info}).status())) << p;
    EXPECT_FALSE(HoldModuleFd(info, getpid(), 0, 0).valid()) << p;
  }
}

}  // namespace
}  // namespace nativeprof::module
