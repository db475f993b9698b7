// `cargo nativeprof` end to end on the workspace in tests/cargo, built offline against Debian's
// crates: Cargo finds the subcommand on PATH, the binary, bench, test and example targets are
// built with line tables and recorded, and bad requests fail before anything is recorded.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/cargo/cargo_test_support.h"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ToolsDir() {
  const std::string binary = NativeprofBinary();
  return binary.substr(0, binary.rfind('/'));
}

// The suite's offline CARGO_HOME (Debian's crates only), written by the cargo_workspace fixture.
std::string OfflineCargoHome() { return NATIVEPROF_CARGO_HOME; }

// `env -C CWD VARS... cargo nativeprof`, run the way a user would: cargo from PATH finds
// cargo-nativeprof beside nativeprof. Without a target dir Cargo uses the project's own.
std::vector<std::string> CargoNativeprofCommand(const std::string& cwd,
                                                const std::string& target_dir) {
  const std::string cargo = NATIVEPROF_CARGO;
  const std::string cargo_dir = cargo.substr(0, cargo.rfind('/'));
  std::vector<std::string> argv = {
      "/usr/bin/env", "-C", cwd,
      // cargo_offline.sh exports this for the fixture; a user's shell would not have it.
      "-u", "CARGO_PROFILE_RELEASE_DEBUG",
      absl::StrCat("PATH=", ToolsDir(), ":", cargo_dir, ":/usr/bin:/bin"),
      absl::StrCat("CARGO_HOME=", OfflineCargoHome())};
  if (!target_dir.empty()) argv.push_back(absl::StrCat("CARGO_TARGET_DIR=", target_dir));
  argv.insert(argv.end(), {"cargo", "nativeprof"});
  return argv;
}

// `cargo nativeprof ARGS` on tests/cargo, run from `cwd`, in the fixture's target directory: its
// release build has the debug setting cargo nativeprof adds, so nothing is rebuilt.
CommandResult CargoNativeprof(const std::string& cwd, const std::vector<std::string>& args) {
  std::vector<std::string> argv = CargoNativeprofCommand(cwd, CargoTargetDir());
  argv.push_back(absl::StrCat("--manifest-path=", SourcePath("tests/cargo/Cargo.toml")));
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

class CargoNativeprofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NP_SKIP_IF_NO_CARGO();
    NP_SKIP_IF_NO_PERF();
    dir_ = MakeTempDir();
  }
  FoldedProfile Folded(const std::string& name) {
    return FoldedProfile::Parse(ReadFileOrEmpty(absl::StrCat(dir_, "/", name)));
  }
  std::string dir_;
};

TEST_F(CargoNativeprofTest, BinaryIsBuiltWithLineTablesAndRecorded) {
  CommandResult r = CargoNativeprof(dir_, {"--bin", "hotbin", "--", "1.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  FoldedProfile p = Folded("nativeprof-hotbin.folded");
  // hotbin burns 1.5 s of wall time, ~1500 samples when it has a CPU to itself; a busy 2-core
  // machine gives it less.
  ASSERT_GT(p.total(), 200u) << r.err;
  EXPECT_GT(p.TotalShare("hotlib::fnv_checksum"), 0.9) << r.err;
  // The release profile has no debug info; inline frames prove line tables were switched on.
  // Every stack through std's lang_start has some (catch_unwind is inlined into it); how many
  // samples land on an inlined *leaf* depends on the CPU model (13 % to 40 % here), so that is
  // not what is counted.
  uint64_t inlined = 0;
  for (const FoldedLine& line : p.lines()) {
    if (std::any_of(line.frames.begin(), line.frames.end(),
                    [](const std::string& f) { return f.ends_with("_[i]"); })) {
      inlined += line.count;
    }
  }
  EXPECT_GT(inlined, p.total() * 9 / 10) << "no inline frames: built without debug info?";
  EXPECT_THAT(ReadFileOrEmpty(dir_ + "/nativeprof-hotbin.svg"), HasSubstr("fnv_checksum"));
  EXPECT_THAT(r.err, HasSubstr("task-clock"));  // the counter table
  EXPECT_THAT(r.out, Not(HasSubstr("compiler-artifact")));  // Cargo's JSON is ours, not the user's
}

TEST_F(CargoNativeprofTest, BenchRunsTheHarnessInBenchModeInItsPackage) {
  CommandResult r = CargoNativeprof(
      dir_, {"--bench", "hot", "-o", "collatz.folded", "--", "--warm-up-time", "1",
             "--measurement-time", "2", "--noplot", "--nresamples", "1000", "hot/collatz"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Criterion measures (prints a time) only when given --bench, as `cargo bench` gives it.
  EXPECT_THAT(r.out, HasSubstr("hot/collatz"));
  EXPECT_THAT(r.out, HasSubstr("time:"));
  FoldedProfile p = Folded("collatz.folded");  // relative -o: from where cargo nativeprof ran
  ASSERT_GT(p.total(), 1000u) << r.err;
  EXPECT_GT(p.TotalShare("hotlib::collatz_steps"), 0.6);
  EXPECT_LT(p.TotalShare("hotlib::fnv_checksum"), 0.02);  // the filter ran one benchmark
}

// Criterion looks its output directory up in CARGO_TARGET_DIR, or else runs `$CARGO metadata`
// (Cargo sets CARGO for its subcommands): that cargo's allocations, more than the benchmark's
// own peak heap, were recorded with it. The target directory here comes from --target-dir.
// Criterion looks it up as it starts, in every mode: `--test` runs each benchmark once and
// writes nothing there. (A --profile-time run wrote the profile directory that
// CriterionHookTest, running beside it, checks.)
TEST_F(CargoNativeprofTest, BenchHarnessRunsNoCargoOfItsOwn) {
  std::vector<std::string> argv = CargoNativeprofCommand(dir_, /*target_dir=*/"");
  argv.insert(argv.end(), {absl::StrCat("--manifest-path=", SourcePath("tests/cargo/Cargo.toml")),
                           absl::StrCat("--target-dir=", CargoTargetDir()), "--alloc", "--bench",
                           "hot", "-o", "c.folded", "--", "--test", "hot/collatz"});
  CommandResult r = RunCommand(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json meta =
      nlohmann::json::parse(ReadFileOrEmpty(dir_ + "/c.folded.json"), nullptr, false);
  ASSERT_TRUE(meta.is_object()) << r.err;
  const nlohmann::json& processes = meta["allocations"]["per_process"];
  ASSERT_TRUE(processes.is_array()) << r.err;
  // The bench itself, and no cargo or rustc (Criterion may run gnuplot where it is installed).
  ASSERT_FALSE(processes.empty()) << r.err;
  for (const nlohmann::json& p : processes) {
    EXPECT_NE(p.value("command", ""), "cargo") << processes.dump();
    EXPECT_NE(p.value("command", ""), "rustc") << processes.dump();
  }
}

// A library's unit tests (`cargo test --lib`), a libtest filter passed through.
TEST_F(CargoNativeprofTest, LibraryUnitTests) {
  std::vector<std::string> argv = CargoNativeprofCommand(dir_, CargoTargetDir());
  // 2 x 6,000 rounds over 64 KiB: about 0.8 s of fnv_checksum in a release build here.
  argv.insert(argv.end() - 2, "HOTLIB_UNIT_ROUNDS=6000");  // before `cargo nativeprof`
  argv.insert(argv.end(), {absl::StrCat("--manifest-path=", SourcePath("tests/cargo/Cargo.toml")),
                           "-p", "hotlib", "--lib", "--", "--exact", "tests::checksum_is_stable"});
  CommandResult r = RunCommand(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("test tests::checksum_is_stable ... ok"));
  FoldedProfile p = Folded("nativeprof-hotlib.folded");
  ASSERT_GT(p.total(), 200u) << r.err;
  EXPECT_GT(p.TotalShare("hotlib::fnv_checksum"), 0.6) << r.err;
}

TEST_F(CargoNativeprofTest, IntegrationTestAndExampleTargets) {
  CommandResult test = CargoNativeprof(dir_, {"--test", "collatz_test"});
  ASSERT_EQ(test.exit_code, 0) << test.err;
  EXPECT_GT(Folded("nativeprof-collatz_test.folded").TotalShare("hotlib::collatz_steps"), 0.8);
  CommandResult example = CargoNativeprof(dir_, {"--example", "checksum"});
  ASSERT_EQ(example.exit_code, 0) << example.err;
  EXPECT_GT(Folded("nativeprof-checksum.folded").TotalShare("hotlib::fnv_checksum"), 0.8);
}

TEST_F(CargoNativeprofTest, AllocOptionPassesThroughToRecord) {
  // hotbin's one big allocation: the 64 KiB input that main collects into a Vec.
  CommandResult r = CargoNativeprof(dir_, {"--alloc=1", "--bin", "hotbin", "--", "0.3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("allocations"));  // the heaptrack-like summary
  FoldedProfile bytes = Folded("nativeprof-hotbin.alloc.folded");
  ASSERT_GE(bytes.total(), 65536u) << r.err;
  uint64_t main_bytes = 0;
  for (const FoldedLine& line : bytes.lines()) {
    for (const std::string& frame : line.frames) {
      if (frame == "hotbin::main") {
        main_bytes += line.count;
        break;
      }
    }
  }
  EXPECT_GE(main_bytes, 65536u) << r.err;
  // The CPU profile is still written beside the allocation views.
  EXPECT_GT(Folded("nativeprof-hotbin.folded").TotalShare("hotlib::fnv_checksum"), 0.5);
}

// A profile that strips, or splits its debug info out of the binary, is built with its symbols
// and its debug info in the binary (neither changes the code); its LTO, which does change the
// code, is what is measured, with a one-line warning.
TEST_F(CargoNativeprofTest, StrippingProfileKeepsItsSymbolsAndDebugInfo) {
  CommandResult r = CargoNativeprof(
      dir_, {"--profile", "stripped", "--bin", "hotbin", "--lines", "--", "0.3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> warnings;
  for (absl::string_view line : absl::StrSplit(r.err, '\n')) {
    if (absl::StrContains(line, "warning:")) warnings.emplace_back(line);
  }
  ASSERT_EQ(warnings.size(), 1u) << r.err;
  EXPECT_THAT(warnings[0], HasSubstr("profile 'stripped' sets lto = \"fat\""));
  EXPECT_THAT(warnings[0], Not(HasSubstr("strip ="))) << warnings[0];
  // Stripped, the binary would have no names at all; with its debug info split out (.dwo
  // files), the hot function would have no line. Fat LTO may inline it into main: it is then an
  // inline frame, named and placed from the line tables.
  FoldedProfile p = Folded("nativeprof-hotbin.folded");
  uint64_t placed = 0;
  for (const FoldedLine& l : p.lines()) {
    if (absl::c_any_of(l.frames, [](const std::string& f) {
          return absl::StartsWith(f, "hotlib::fnv_checksum (hotlib/src/lib.rs:");
        })) {
      placed += l.count;
    }
  }
  EXPECT_GT(placed, p.total() / 2) << r.err;
}

TEST_F(CargoNativeprofTest, ProgramExitStatusIsPassedOn) {
  CommandResult r = CargoNativeprof(dir_, {"--bin", "hotbin", "--", "--fail"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

TEST_F(CargoNativeprofTest, MissingTargetFailsAndRecordsNothing) {
  CommandResult r = CargoNativeprof(dir_, {"--bin", "no_such_bin"});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cargo build failed"));
  EXPECT_EQ(ReadFileOrEmpty(dir_ + "/nativeprof-no_such_bin.folded"), "");
}

TEST_F(CargoNativeprofTest, BuildFailureRecordsNothing) {
  const std::string crate = dir_ + "/broken";
  ::mkdir(crate.c_str(), 0755);
  ::mkdir((crate + "/src").c_str(), 0755);
  std::ofstream(crate + "/Cargo.toml") << "[package]\nname = \"broken\"\nversion = \"0.1.0\"\n"
                                          "edition = \"2021\"\n";
  std::ofstream(crate + "/src/main.rs") << "fn main() { let x: u32 = \"text\"; }\n";
  CommandResult r = RunCommand(CargoNativeprofCommand(crate, ""));
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_THAT(r.err, HasSubstr("mismatched types"));  // Cargo's own diagnostics reach the user
  EXPECT_THAT(r.err, HasSubstr("nativeprof: cargo build failed"));
  EXPECT_EQ(ReadFileOrEmpty(crate + "/nativeprof-broken.folded"), "");
}

TEST_F(CargoNativeprofTest, OutsideACargoProjectAndBadOptions) {
  CommandResult outside = RunCommand({"/usr/bin/env", "-C", dir_,
                                      absl::StrCat("CARGO_HOME=", OfflineCargoHome()),
                                      NativeprofBinary(), "cargo", "--bin", "x"});
  EXPECT_EQ(outside.exit_code, 6) << outside.err;
  EXPECT_THAT(outside.err, HasSubstr("no Cargo.toml"));
  EXPECT_THAT(outside.err, Not(HasSubstr("could not find `Cargo.toml`")));  // said once, not twice
  CommandResult no_manifest = CargoNativeprof(dir_, {"--manifest-path", "nowhere/Cargo.toml"});
  EXPECT_EQ(no_manifest.exit_code, 6) << no_manifest.err;
  EXPECT_THAT(no_manifest.err, HasSubstr("--manifest-path nowhere/Cargo.toml: no such file"));
  // Its fix is its own: the path, not "give --manifest-path", which was given.
  EXPECT_THAT(no_manifest.err, HasSubstr("give --manifest-path the path of a Cargo.toml"));
  EXPECT_THAT(outside.err, HasSubstr("inside a Cargo project or give --manifest-path PATH"));
  CommandResult typo = CargoNativeprof(dir_, {"--bin", "hotbin", "--frequncy", "99"});
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  CommandResult pid = CargoNativeprof(dir_, {"--pid", "1"});
  EXPECT_EQ(pid.exit_code, 2);
  EXPECT_THAT(pid.err, HasSubstr("nativeprof record -p PID"));
}

}  // namespace
}  // namespace nativeprof::testing
