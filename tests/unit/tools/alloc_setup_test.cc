#include "tools/alloc_setup.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::tools {
namespace {

// glibc's libraries, which every Debian system has, stand for a user's LD_PRELOAD entries: libc
// defines malloc (as jemalloc and tcmalloc do), libm does not.
TEST(AllocSetupTest, PreloadEntriesAreFoundAndAllocatorsTold) {
  const std::string libc = ResolvePreloadEntry("libc.so.6");
  ASSERT_FALSE(libc.empty());
  EXPECT_TRUE(ReplacesAllocator(libc));
  const std::string libm = ResolvePreloadEntry("libm.so.6");
  ASSERT_FALSE(libm.empty());
  EXPECT_FALSE(ReplacesAllocator(libm));
  EXPECT_EQ(ResolvePreloadEntry(libm), libm);  // a path is taken as it is
  EXPECT_EQ(ResolvePreloadEntry("libnativeprof-no-such-library.so"), "");
  EXPECT_EQ(ResolvePreloadEntry("/no/such/libjemalloc.so.2"), "");
  EXPECT_FALSE(ReplacesAllocator("/no/such/libjemalloc.so.2"));
  EXPECT_FALSE(ReplacesAllocator("/etc/passwd"));  // not ELF
}

// A bare name is also looked up in LD_LIBRARY_PATH's directories, as the loader does.
TEST(AllocSetupTest, LibraryPathIsSearched) {
  const std::string libm = ResolvePreloadEntry("libm.so.6");
  ASSERT_FALSE(libm.empty());
  const std::string dir = testing::MakeTempDir();
  ASSERT_EQ(::symlink(libm.c_str(), (dir + "/libnp-only-here.so").c_str()), 0);
  EXPECT_EQ(ResolvePreloadEntry("libnp-only-here.so"), "");
  const char* saved = std::getenv("LD_LIBRARY_PATH");
  const std::string old = saved != nullptr ? saved : "";
  ::setenv("LD_LIBRARY_PATH", ("/nonexistent::" + dir).c_str(), 1);
  EXPECT_EQ(ResolvePreloadEntry("libnp-only-here.so"), dir + "/libnp-only-here.so");
  if (saved != nullptr) {
    ::setenv("LD_LIBRARY_PATH", old.c_str(), 1);
  } else {
    ::unsetenv("LD_LIBRARY_PATH");
  }
}

// A program is checked for an allocator of its own: in the executable, or in a library it needs
// (found through its RUNPATH too). A plain program, and one that is not ELF, pass.
TEST(AllocSetupTest, ProgramsWithAnAllocatorOfTheirOwnAreTold) {
  EXPECT_TRUE(CheckInterposable(testing::TargetPath("alloc_workload")).ok());
  EXPECT_TRUE(CheckInterposable("/etc/passwd").ok());
  const absl::Status linked = CheckInterposable(testing::TargetPath("alloc_linked_standin"));
  EXPECT_EQ(linked.code(), absl::StatusCode::kFailedPrecondition) << linked;
  EXPECT_THAT(linked.message(), ::testing::HasSubstr("links liballoc_standin.so"));
  EXPECT_THAT(linked.message(), ::testing::HasSubstr("cannot be told from --alloc's"));
  const absl::Status via = CheckInterposable(testing::TargetPath("alloc_linked_via"));
  EXPECT_THAT(via.message(),
              ::testing::HasSubstr("links liballoc_standin.so (through liballoc_via_standin.so)"));
  const absl::Status own = CheckInterposable(testing::TargetPath("alloc_own_malloc"));
  EXPECT_EQ(own.code(), absl::StatusCode::kFailedPrecondition) << own;
  EXPECT_THAT(own.message(), ::testing::HasSubstr("defines malloc itself"));
  const absl::Status fixed = CheckInterposable(testing::TargetPath("alloc_static"));
  EXPECT_THAT(fixed.message(), ::testing::HasSubstr("statically linked"));
  // A Go program (told by the section Go's linker writes) is named as one: dropping -static
  // would not bring its allocations to malloc.
  const std::string dir = testing::MakeTempDir();
  { std::ofstream(dir + "/buildinfo") << "\xff Go buildinf:"; }
  const testing::CommandResult added = testing::RunCommand(
      {"objcopy", "--add-section", ".go.buildinfo=" + dir + "/buildinfo",
       testing::TargetPath("alloc_static"), dir + "/gostatic"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const absl::Status go = CheckInterposable(dir + "/gostatic");
  EXPECT_EQ(go.code(), absl::StatusCode::kFailedPrecondition) << go;
  EXPECT_THAT(go.message(), ::testing::HasSubstr("is a Go program"));
  EXPECT_THAT(go.message(), ::testing::Not(::testing::HasSubstr("musl")));
  // The stand-in is found only through the RUNPATH the test target carries.
  const std::string standin = testing::TargetPath("liballoc_standin.so");
  EXPECT_EQ(ResolveLibrary("liballoc_standin.so", {}), "");
  EXPECT_EQ(ResolveLibrary("liballoc_standin.so",
                           {{}, {"/nonexistent", standin.substr(0, standin.rfind('/'))}}),
            standin);
  EXPECT_EQ(ResolveLibrary("liballoc_standin.so", {{standin.substr(0, standin.rfind('/'))}, {}}),
            standin);
}

}  // namespace
}  // namespace nativeprof::tools
