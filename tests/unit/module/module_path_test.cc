// The one list of pseudo-paths: which kernel-reported paths name a file, the vdso, or no file.
#include "module/module_path.h"

#include "gtest/gtest.h"

namespace nativeprof::module {
namespace {

TEST(ModulePathTest, PathsWithoutAFile) {
  // The paths unwind/ called anonymous and those symbolize/ called pseudo-paths: one list now.
  for (const char* p : {"", "//anon", "[heap]", "[stack]", "[anon:jit]", "[vsyscall]",
                        "anon_inode:[perf_event]", "/dev/zero (deleted)",
                        "/SYSV00000000 (deleted)"}) {
    EXPECT_EQ(KindOfPath(p), PathKind::kNoFile) << p;
    EXPECT_FALSE(HasFile(KindOfPath(p))) << p;
  }
  EXPECT_EQ(KindOfPath("[vdso]"), PathKind::kVdso);
  // A memfd is opened through its mapping only (a program run from one is an ELF image).
  for (const char* p : {"/memfd:x", "/memfd:jit (deleted)"}) {
    EXPECT_EQ(KindOfPath(p), PathKind::kMemfd) << p;
    EXPECT_TRUE(HasFile(KindOfPath(p))) << p;
  }
  for (const char* p : {"/usr/lib/libc.so.6", "/tmp/a (deleted)"}) {
    EXPECT_EQ(KindOfPath(p), PathKind::kFile) << p;
  }
}

TEST(ModulePathTest, PathOnDiskDropsTheDeletedSuffix) {
  EXPECT_EQ(PathOnDisk("/tmp/a (deleted)"), "/tmp/a");
  EXPECT_EQ(PathOnDisk("/usr/bin/x"), "/usr/bin/x");
}

}  // namespace
}  // namespace nativeprof::module
