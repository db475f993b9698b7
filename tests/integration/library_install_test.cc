// libnativeprof as users get it: `cmake --install --component library` into a temporary prefix,
// then examples/ configured with find_package(nativeprof) and built with pkg-config alone
// against that copy, and the programs run: each writes a profile naming its own function.
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::NativeprofBinary;
using ::nativeprof::testing::ReadFileOrEmpty;
using ::nativeprof::testing::RunCommand;
using ::nativeprof::testing::SourcePath;
using ::testing::HasSubstr;

// The build tree holding the tested nativeprof binary (<build>/tools/nativeprof).
std::string BuildDir() {
  return std::filesystem::path(NativeprofBinary()).parent_path().parent_path().string();
}

std::string Install(const std::string& tmp) {
  const std::string prefix = tmp + "/prefix";
  testing::CommandResult r =
      RunCommand({"cmake", "--install", BuildDir(), "--prefix", prefix, "--component", "library"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return prefix;
}

TEST(LibraryInstallTest, InstalledPackageBuildsAndRunsTheExamples) {
  NP_SKIP_IF_NO_PERF();
  const std::string tmp = MakeTempDir();
  const std::string prefix = Install(tmp);
  ASSERT_TRUE(std::filesystem::exists(prefix + "/include/nativeprof/nativeprof.h"));
  // Only the C API is exported.
  testing::CommandResult nm = RunCommand({"sh", "-c", absl::StrCat(
      "nm -D --defined-only ", prefix, "/lib*/libnativeprof.so | awk '{print $3}' | sort -u")});
  EXPECT_THAT(nm.out, HasSubstr("np_profiler_start"));
  EXPECT_THAT(nm.out, HasSubstr("np_profiler_write@"));
  EXPECT_THAT(nm.out, HasSubstr("np_profiler_write_counters@"));
  for (absl::string_view symbol : absl::StrSplit(nm.out, '\n', absl::SkipEmpty())) {
    // NATIVEPROF_0 is the version node of cmake/nativeprof.map, not a symbol.
    EXPECT_TRUE(absl::StartsWith(symbol, "np_") || symbol == "NATIVEPROF_0") << symbol;
  }
  EXPECT_THAT(nm.out, ::testing::Not(HasSubstr("nativeprof::")));
  EXPECT_THAT(nm.out, ::testing::Not(HasSubstr("_ZN")));

  const std::string build = tmp + "/examples-build";
  testing::CommandResult configure =
      RunCommand({"cmake", "-S", SourcePath("examples"), "-B", build, "-G", "Ninja",
                  "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"});
  ASSERT_EQ(configure.exit_code, 0) << configure.out << configure.err;
  testing::CommandResult compile = RunCommand({"cmake", "--build", build, "-j", "2"});
  ASSERT_EQ(compile.exit_code, 0) << compile.out << compile.err;

  testing::CommandResult c = RunCommand({build + "/profile_region_c", tmp + "/c.folded"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(ReadFileOrEmpty(tmp + "/c.folded"), HasSubstr("SpinInExampleC"));
  EXPECT_THAT(c.out, HasSubstr("page-faults "));

  testing::CommandResult cpp = RunCommand({build + "/profile_region_cpp", tmp + "/cpp.folded"});
  ASSERT_EQ(cpp.exit_code, 0) << cpp.err;
  EXPECT_THAT(ReadFileOrEmpty(tmp + "/cpp.folded"), HasSubstr("SpinInExampleCpp"));

  // Google Benchmark is a build dependency of nativeprof, so the benchmark example is built too.
  ASSERT_TRUE(std::filesystem::exists(build + "/benchmark_example"));
  {
    testing::CommandResult bm =
        RunCommand({build + "/benchmark_example", "--nativeprof_out=" + tmp + "/bm",
                    "--benchmark_min_time=0.1"});
    ASSERT_EQ(bm.exit_code, 0) << bm.err;
    EXPECT_THAT(ReadFileOrEmpty(tmp + "/bm/BM_SumExample_4096.folded"), HasSubstr("SumExample"));
    EXPECT_THAT(bm.out, HasSubstr("page_faults="));
  }
}

TEST(LibraryInstallTest, PkgConfigAloneBuildsTheExamples) {
  NP_SKIP_IF_NO_PERF();
  const std::string tmp = MakeTempDir();
  const std::string prefix = Install(tmp);
  testing::CommandResult b =
      RunCommand({"sh", SourcePath("examples/build_with_pkgconfig.sh"), prefix, tmp});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  testing::CommandResult c = RunCommand({tmp + "/profile_region_c", tmp + "/c.folded"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(ReadFileOrEmpty(tmp + "/c.folded"), HasSubstr("SpinInExampleC"));
  testing::CommandResult cpp = RunCommand({tmp + "/profile_region_cpp", tmp + "/cpp.folded"});
  ASSERT_EQ(cpp.exit_code, 0) << cpp.err;
  EXPECT_THAT(ReadFileOrEmpty(tmp + "/cpp.folded"), HasSubstr("SpinInExampleCpp"));
}

}  // namespace
}  // namespace nativeprof
