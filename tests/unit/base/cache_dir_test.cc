#include "base/cache_dir.h"

#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::ReadFileOrEmpty;

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

void SetMtime(const std::string& path, time_t when) {
  struct utimbuf times{when, when};
  ASSERT_EQ(::utime(path.c_str(), &times), 0) << path;
}

TEST(CacheDirTest, EnvironmentChoosesTheRootOrTurnsCachingOff) {
  {
    ScopedEnv dir("NATIVEPROF_CACHE_DIR", "/some/where");
    ASSERT_TRUE(CacheDir::FromEnvironment().has_value());
    EXPECT_EQ(CacheDir::FromEnvironment()->root(), "/some/where");
  }
  for (const char* off : {"off", "0", ""}) {
    ScopedEnv dir("NATIVEPROF_CACHE_DIR", off);
    EXPECT_FALSE(CacheDir::FromEnvironment().has_value()) << off;
  }
  ScopedEnv unset("NATIVEPROF_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(CacheDir::FromEnvironment()->root(), "/xdg/nativeprof");
  }
  ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(CacheDir::FromEnvironment()->root(), "/home/u/.cache/nativeprof");
  }
  ScopedEnv no_home("HOME", nullptr);
  EXPECT_FALSE(CacheDir::FromEnvironment().has_value());
}

TEST(CacheDirTest, PutCreatesPrivateDirectoriesAndWritesTheEntry) {
  const std::string root = MakeTempDir() + "/a/b";
  CacheDir cache(root);
  NP_ASSERT_OK(cache.Put("kernel", "entry", "contents", 1 << 20));
  EXPECT_EQ(cache.PathOf("kernel", "entry"), root + "/kernel/entry");
  EXPECT_EQ(ReadFileOrEmpty(root + "/kernel/entry"), "contents");
  struct stat st;
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((root + "/kernel").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(CacheDirTest, PutIntoAnUnwritablePlaceIsAnErrorNotACrash) {
  const std::string dir = MakeTempDir();
  const std::string file = dir + "/plain-file";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  CacheDir cache(file + "/below");  // a directory cannot be created under a regular file
  EXPECT_FALSE(cache.Put("debug", "x", "y", 1 << 20).ok());
}

TEST(CacheDirTest, TrimRemovesLeastRecentlyUsedEntriesAndSparesTouchedOnes) {
  const std::string root = MakeTempDir();
  CacheDir cache(root);
  const std::string blob(1000, 'x');
  NP_ASSERT_OK(cache.Put("debug", "old", blob, 1 << 20));
  NP_ASSERT_OK(cache.Put("debug", "used", blob, 1 << 20));
  NP_ASSERT_OK(cache.Put("debug", "middle", blob, 1 << 20));
  SetMtime(cache.PathOf("debug", "old"), 1000);
  SetMtime(cache.PathOf("debug", "used"), 1500);
  SetMtime(cache.PathOf("debug", "middle"), 2000);
  CacheDir::Touch(cache.PathOf("debug", "used"));  // used just now: the newest of the three
  // Another (live) process's entry in the making is never trimmed.
  const std::string in_flight_name = "other.tmp." + std::to_string(::getppid());
  const std::string in_flight = root + "/debug/" + in_flight_name;
  NP_ASSERT_OK(cache.Put("debug", in_flight_name, blob, 1 << 20));
  SetMtime(in_flight, 10);

  // Room for three entries of 1000 bytes: adding a fourth (plus the in-flight one, which counts
  // towards the size only if it were ours) must evict the two least recently used.
  NP_ASSERT_OK(cache.Put("debug", "new", blob, 2500));
  EXPECT_FALSE(std::filesystem::exists(cache.PathOf("debug", "old")));
  EXPECT_FALSE(std::filesystem::exists(cache.PathOf("debug", "middle")));
  EXPECT_TRUE(std::filesystem::exists(cache.PathOf("debug", "used")));
  EXPECT_TRUE(std::filesystem::exists(cache.PathOf("debug", "new")));
  EXPECT_TRUE(std::filesystem::exists(in_flight));
}

TEST(CacheDirTest, PutRemovesWhatWritersKilledMidEntryLeftInTheBucket) {
  const std::string root = MakeTempDir();
  CacheDir cache(root);
  NP_ASSERT_OK(cache.Put("debug", "keep", "k", 1 << 20));
  const std::string dead = std::to_string(testing::ReapedPid());
  const std::string live = std::to_string(::getppid());
  for (const std::string& name :
       {"a.debug.tmp." + dead, "b.debug.tmp." + live, std::string("c.debug.tmp.x")}) {
    std::ofstream(root + "/debug/" + name) << std::string(1000, 'x');
  }
  NP_ASSERT_OK(cache.Put("debug", "new", "n", 1 << 20));
  EXPECT_FALSE(std::filesystem::exists(root + "/debug/a.debug.tmp." + dead));
  EXPECT_TRUE(std::filesystem::exists(root + "/debug/b.debug.tmp." + live));
  EXPECT_TRUE(std::filesystem::exists(root + "/debug/c.debug.tmp.x"));
  EXPECT_EQ(ReadFileOrEmpty(cache.PathOf("debug", "keep")), "k");
  EXPECT_EQ(ReadFileOrEmpty(cache.PathOf("debug", "new")), "n");
}

TEST(CacheDirTest, AnEntryLargerThanTheLimitIsStillKept) {
  CacheDir cache(MakeTempDir());
  NP_ASSERT_OK(cache.Put("debug", "big", std::string(5000, 'x'), 100));
  EXPECT_TRUE(std::filesystem::exists(cache.PathOf("debug", "big")));
}

}  // namespace
}  // namespace nativeprof
