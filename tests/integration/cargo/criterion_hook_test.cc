// The Criterion hook of bindings/rust (nativeprof::criterion::CriterionProfiler) in
// tests/cargo/hotlib/benches/hot.rs: `cargo bench --bench hot -- --profile-time 3 <id>` writes
// that benchmark's folded stacks, flame graph and counter table into
// target/criterion/<id with '/' -> '_'>/profile/, and each profile holds only its own benchmark (checksum's is
// fnv_checksum, collatz's is collatz_steps, never the other beyond noise). Also: a normal quick
// run (`-- --test`) is unaffected and writes no profile, and the crate's own `cargo test` passes.
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cargo/cargo_test_support.h"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::nativeprof::testing::CargoTargetDir;
using ::nativeprof::testing::CargoWorkspaceManifest;
using ::nativeprof::testing::FoldedProfile;
using ::nativeprof::testing::ReadFileOrEmpty;
using ::nativeprof::testing::RunCargo;
using ::testing::HasSubstr;

constexpr char kChecksum[] = "hotlib::fnv_checksum";
constexpr char kCollatz[] = "hotlib::collatz_steps";

// Criterion's directory for benchmark `id`: its name made file-name safe ('/' -> '_'), then
// "profile" (criterion 0.3.6 routine.rs, BenchmarkId::as_directory_name).
std::string ProfileDir(const std::string& id) {
  return absl::StrCat(CargoTargetDir(), "/criterion/", absl::StrReplaceAll(id, {{"/", "_"}}),
                      "/profile");
}

// Profiles benchmark `id` for 3 s and checks its directory: `mine` is on at least 80% of the
// stacks, `other` (the other benchmark's function) on at most 1%.
void ProfileAndCheck(const std::string& id, const char* mine, const char* other) {
  const std::string dir = ProfileDir(id);
  std::filesystem::remove_all(dir);
  testing::CommandResult r =
      RunCargo({"bench", "--manifest-path", CargoWorkspaceManifest(), "--bench", "hot", "--",
                "--profile-time", "3", id});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("nativeprof: ", id, ": ")));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("cannot"))) << r.err;

  const std::string folded = ReadFileOrEmpty(dir + "/nativeprof.folded");
  ASSERT_FALSE(folded.empty()) << dir << "\n" << r.err;
  FoldedProfile profile = FoldedProfile::Parse(folded);
  EXPECT_TRUE(profile.errors().empty()) << profile.errors().front();
  ASSERT_GT(profile.total(), 300u) << folded.substr(0, 2000);  // ~2 s of one thread at 999 Hz
  // Total, not self: the build has line tables (as cargo nativeprof builds), so the hottest
  // leaves are frames inlined into `mine` (`<u64>::wrapping_mul_[i]`).
  const double mine_share = profile.TotalShare(mine);
  const double other_share = profile.TotalShare(other);
  std::printf("%s: %llu samples, %s %.1f%% total, %s %.2f%% total\n", id.c_str(),
              static_cast<unsigned long long>(profile.total()), mine, 100 * mine_share, other,
              100 * other_share);
  EXPECT_GE(mine_share, 0.8) << folded.substr(0, 4000);
  EXPECT_LE(other_share, 0.01) << folded.substr(0, 4000);

  const std::string svg = ReadFileOrEmpty(dir + "/flamegraph.svg");
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr(mine));
  const std::string counters = ReadFileOrEmpty(dir + "/counters.txt");
  EXPECT_THAT(counters, HasSubstr("task-clock"));
  EXPECT_THAT(counters, HasSubstr("page-faults"));
}

TEST(CriterionHookTest, ChecksumProfileHoldsOnlyTheChecksum) {
  NP_SKIP_IF_NO_CARGO();
  NP_SKIP_IF_NO_PERF();
  ProfileAndCheck("hot/checksum", kChecksum, kCollatz);
}

TEST(CriterionHookTest, CollatzProfileHoldsOnlyTheCollatz) {
  NP_SKIP_IF_NO_CARGO();
  NP_SKIP_IF_NO_PERF();
  ProfileAndCheck("hot/collatz", kCollatz, kChecksum);
  // A second run keeps the first profile as nativeprof.previous.folded, for `nativeprof diff`.
  const std::string dir = ProfileDir("hot/collatz");
  const std::string first = ReadFileOrEmpty(dir + "/nativeprof.folded");
  testing::CommandResult again =
      RunCargo({"bench", "--manifest-path", CargoWorkspaceManifest(), "--bench", "hot", "--",
                "--profile-time", "1", "hot/collatz"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ReadFileOrEmpty(dir + "/nativeprof.previous.folded"), first);
  EXPECT_NE(ReadFileOrEmpty(dir + "/nativeprof.folded"), first);
}

// Without --profile-time Criterion never calls the profiler: the benchmarks run and the hook,
// which reports every benchmark it profiled on stderr, stays silent.
TEST(CriterionHookTest, NormalRunIsUnaffected) {
  NP_SKIP_IF_NO_CARGO();
  testing::CommandResult r = RunCargo(
      {"bench", "--manifest-path", CargoWorkspaceManifest(), "--bench", "hot", "--", "--test"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("hot/checksum"));
  EXPECT_THAT(r.out, HasSubstr("hot/collatz"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("nativeprof:")));
}

TEST(RustCrateTest, CargoTestPasses) {
  NP_SKIP_IF_NO_CARGO();
  testing::CommandResult r =
      RunCargo({"test", "--manifest-path", testing::RustBindingsManifest()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("test result: ok"));
}

}  // namespace
}  // namespace nativeprof
