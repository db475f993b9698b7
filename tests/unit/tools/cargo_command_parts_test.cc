// The parts of `cargo nativeprof` that need no cargo: its command line, the profile settings it
// reads from Cargo.toml and the environment, and Cargo's JSON artifact messages.
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"
#include "tools/cargo_build.h"
#include "tools/cargo_options.h"
#include "tools/cargo_profile.h"

namespace nativeprof::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::StatusOr<CargoOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cargo");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return ParseCargoOptions(static_cast<int>(args.size()), argv.data());
}

TEST(CargoOptionsTest, SplitsTargetCargoRecordAndProgramArguments) {
  absl::StatusOr<CargoOptions> o =
      Parse({"--bench", "parse", "-F", "999", "--features=simd", "-p", "core", "--call-graph",
             "fp", "-o", "x.svg", "--", "parse/json", "--noplot"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->kind, CargoTargetKind::kBench);
  EXPECT_EQ(o->target_name, "parse");
  EXPECT_EQ(o->profile, "release");
  EXPECT_THAT(o->cargo_args, ElementsAre("--features=simd", "--package=core"));
  EXPECT_THAT(o->record_args, ElementsAre("-F", "999", "--call-graph", "fp", "-o", "x.svg"));
  EXPECT_THAT(o->program_args, ElementsAre("parse/json", "--noplot"));
  EXPECT_TRUE(o->record_outputs_given);
}

TEST(CargoOptionsTest, DefaultsToTheOnlyBinaryInRelease) {
  absl::StatusOr<CargoOptions> o = Parse({});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, CargoTargetKind::kDefaultBin);
  EXPECT_EQ(o->profile, "release");
  EXPECT_FALSE(o->record_outputs_given);
  EXPECT_THAT(CargoBuildArgs(*o), ElementsAre("build", "--message-format=json-render-diagnostics",
                                               "--profile=release", "--bins"));
}

TEST(CargoOptionsTest, ProfileSpellings) {
  EXPECT_EQ(Parse({"--profile", "profiling"})->profile, "profiling");
  EXPECT_EQ(Parse({"--profile=bench"})->profile, "bench");
  EXPECT_EQ(Parse({"--dev"})->profile, "dev");
  EXPECT_EQ(Parse({"--dev", "--release"})->profile, "release");
  EXPECT_EQ(CargoProfileEnvName("my-profile"), "MY_PROFILE");
  EXPECT_EQ(CargoProfileVariable("my-profile", "split-debuginfo"),
            "CARGO_PROFILE_MY_PROFILE_SPLIT_DEBUGINFO");
}

TEST(CargoOptionsTest, RejectsWhatCannotMeanAnything) {
  EXPECT_THAT(Parse({"--bin", "a", "--bench", "b"}).status().message(),
              HasSubstr("more than one target"));
  EXPECT_THAT(Parse({"--bin"}).status().message(), HasSubstr("--bin needs a target name"));
  EXPECT_THAT(Parse({"--bin", "--release"}).status().message(), HasSubstr("needs a target name"));
  EXPECT_THAT(Parse({"--pid", "12"}).status().message(), HasSubstr("nativeprof record -p PID"));
  EXPECT_THAT(Parse({"--features"}).status().message(), HasSubstr("--features needs a value"));
}

TEST(CargoOptionsTest, BuildArgumentsNameTheTarget) {
  absl::StatusOr<CargoOptions> o = Parse({"--example", "demo", "--profile", "dev", "--locked"});
  ASSERT_TRUE(o.ok());
  EXPECT_THAT(CargoBuildArgs(*o),
              ElementsAre("build", "--message-format=json-render-diagnostics", "--profile=dev",
                          "--example=demo", "--locked"));
}

// A library's unit tests: built by `cargo test --no-run --lib`, found among the artifacts by the
// library's crate type (it has no target name to give).
TEST(CargoOptionsTest, LibraryUnitTests) {
  absl::StatusOr<CargoOptions> o = Parse({"--lib", "-p", "core", "--", "--exact", "t::hot"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->kind, CargoTargetKind::kLib);
  EXPECT_THAT(o->program_args, ElementsAre("--exact", "t::hot"));
  EXPECT_THAT(CargoBuildArgs(*o),
              ElementsAre("test", "--no-run", "--message-format=json-render-diagnostics",
                          "--profile=release", "--lib", "--package=core"));
  const CargoArtifact unit_tests{.executable = "/t/release/deps/core-1", .target_name = "core",
                                 .kinds = {"cdylib", "rlib"}};
  const CargoArtifact bin{.executable = "/t/release/tool", .target_name = "tool", .kinds = {"bin"}};
  absl::StatusOr<CargoArtifact> chosen = SelectArtifact(*o, {bin, unit_tests});
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->executable, "/t/release/deps/core-1");
  absl::StatusOr<CargoArtifact> two = SelectArtifact(*o, {unit_tests, unit_tests});
  EXPECT_THAT(two.status().message(), HasSubstr("choose the package with -p NAME"));
  EXPECT_FALSE(Parse({"--lib", "--bin", "x"}).ok());
  EXPECT_FALSE(Parse({"--bin", "x", "--lib"}).ok());
}

// ---- profile settings ----

absl::StatusOr<CargoProfileSettings> Read(const std::string& toml, const std::string& profile,
                                          std::map<std::string, std::string> env = {}) {
  return ReadCargoProfile(toml, profile, [env](const std::string& name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// A stand-in for cargo that answers `metadata` as Cargo does (one JSON line), after checking
// which of the build's arguments it was given.
std::string FakeCargo(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/cargo";
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(CargoTargetDirectoryTest, FromTargetDirOrCargoMetadata) {
  const std::string dir = ::nativeprof::testing::MakeTempDir();
  // --target-dir wins, relative to where cargo nativeprof was started; cargo is not run.
  EXPECT_EQ(*CargoTargetDirectory(dir + "/no-cargo", {"--target-dir=t"}, "/work"), "/work/t");
  EXPECT_EQ(*CargoTargetDirectory(dir + "/no-cargo", {"--target-dir=/abs"}, "/work"), "/abs");
  const std::string cargo = FakeCargo(
      dir,
      "[ \"$*\" = 'metadata --format-version 1 --no-deps --manifest-path=/p/Cargo.toml "
      "--offline' ] || exit 3\n"
      "echo '{\"packages\":[],\"target_directory\":\"/p/target\",\"version\":1}'");
  absl::StatusOr<std::string> got = CargoTargetDirectory(
      cargo, {"--features=simd", "--manifest-path=/p/Cargo.toml", "--offline"}, "/work");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "/p/target");
  absl::StatusOr<std::string> failed = CargoTargetDirectory(cargo, {}, "/work");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound) << failed.status();
}

TEST(CargoProfileTest, BuiltInDefaults) {
  absl::StatusOr<CargoProfileSettings> release = Read("[package]\nname = \"x\"\n", "release");
  ASSERT_TRUE(release.ok()) << release.status();
  EXPECT_FALSE(release->HasLineTables());
  EXPECT_EQ(release->Warning(), "");
  EXPECT_TRUE(Read("", "dev")->HasLineTables());
  EXPECT_TRUE(Read("", "test")->HasLineTables());   // inherits dev
  EXPECT_FALSE(Read("", "bench")->HasLineTables());  // inherits release
}

TEST(CargoProfileTest, DebugSpellingsThatCarryLineTables) {
  for (const char* v : {"true", "1", "2", "\"limited\"", "\"full\"", "\"line-tables-only\""}) {
    EXPECT_TRUE(Read(std::string("[profile.release]\ndebug = ") + v, "release")->HasLineTables())
        << v;
  }
  for (const char* v : {"false", "0", "\"none\"", "\"line-directives-only\""}) {
    EXPECT_FALSE(Read(std::string("[profile.release]\ndebug = ") + v, "release")->HasLineTables())
        << v;
  }
}

TEST(CargoProfileTest, InheritsChainAndEnvironmentOverride) {
  const std::string toml = R"([profile.release]
lto = "thin"
[profile.profiling]
inherits = "release"
strip = "symbols"
[profile.deeper]
inherits = "profiling"
debug = 1
)";
  absl::StatusOr<CargoProfileSettings> deeper = Read(toml, "deeper");
  ASSERT_TRUE(deeper.ok()) << deeper.status();
  EXPECT_EQ(deeper->debug, "1");
  EXPECT_EQ(deeper->strip, "symbols");
  EXPECT_EQ(deeper->lto, "thin");
  EXPECT_EQ(deeper->Warning(),
            "profile 'deeper' sets strip = \"symbols\" and lto = \"thin\": frames will be unnamed; "
            "profile with CARGO_PROFILE_DEEPER_STRIP=false CARGO_PROFILE_DEEPER_LTO=false, or a "
            "profile without them");
  // Cargo's environment overrides Cargo.toml at each level of the chain.
  absl::StatusOr<CargoProfileSettings> overridden =
      Read(toml, "deeper", {{"CARGO_PROFILE_PROFILING_STRIP", "false"},
                            {"CARGO_PROFILE_RELEASE_LTO", "false"}});
  EXPECT_EQ(overridden->Warning(), "");
  // Only a variable's strip is the user's explicit choice (cargo nativeprof keeps the others'
  // symbols).
  EXPECT_FALSE(deeper->strip_from_environment);
  EXPECT_TRUE(overridden->strip_from_environment);
  EXPECT_FALSE(Read(toml, "deeper", {{"CARGO_PROFILE_RELEASE_STRIP", "symbols"}})
                   ->strip_from_environment);  // deeper's chain sets it in Cargo.toml first
  EXPECT_FALSE(Read(toml, "profiling", {{"CARGO_PROFILE_PROFILING_DEBUG", "0"}})->HasLineTables());
  EXPECT_TRUE(Read(toml, "release", {{"CARGO_PROFILE_RELEASE_DEBUG", "1"}})->HasLineTables());
}

TEST(CargoProfileTest, LtoAloneAndStripDebuginfoWarnDifferently) {
  EXPECT_EQ(Read("[profile.release]\nlto = true\n", "release")->Warning(),
            "profile 'release' sets lto = \"true\": functions inlined across crates show only as "
            "inline frames; profile with CARGO_PROFILE_RELEASE_LTO=false, or a profile without it");
  EXPECT_THAT(Read("[profile.release]\nlto = \"off\"\n", "release")->Warning(), IsEmpty());
  EXPECT_THAT(Read("[profile.release]\nstrip = \"debuginfo\"\n", "release")->Warning(),
              HasSubstr("inline frames and file:line are lost"));
}

// Split debug info moves the program's DWARF into .dwo/.dwp files, which are not read: read from
// the profile (cargo nativeprof turns it off) and warned about when a variable keeps it.
TEST(CargoProfileTest, SplitDebuginfoIsReadAndWarnedAbout) {
  absl::StatusOr<CargoProfileSettings> toml =
      Read("[profile.release]\nsplit-debuginfo = \"unpacked\"\n", "release");
  ASSERT_TRUE(toml.ok()) << toml.status();
  EXPECT_EQ(toml->split_debuginfo, "unpacked");
  EXPECT_FALSE(toml->split_debuginfo_from_environment);
  absl::StatusOr<CargoProfileSettings> env =
      Read("", "bench", {{"CARGO_PROFILE_RELEASE_SPLIT_DEBUGINFO", "packed"}});
  EXPECT_EQ(env->split_debuginfo, "packed");
  EXPECT_TRUE(env->split_debuginfo_from_environment);
  EXPECT_EQ(env->Warning(),
            "profile 'bench' sets split-debuginfo = \"packed\": the program's inline frames and "
            "file:line are lost; profile with CARGO_PROFILE_BENCH_SPLIT_DEBUGINFO=off, or a "
            "profile without it");
  EXPECT_EQ(Read("[profile.release]\nsplit-debuginfo = \"off\"\n", "release")->Warning(), "");
}

TEST(CargoProfileTest, BrokenTomlAndCyclesAreErrors) {
  EXPECT_THAT(Read("[profile.release\n", "release").status().message(), HasSubstr("Cargo.toml"));
  EXPECT_THAT(Read("[profile.a]\ninherits = \"b\"\n[profile.b]\ninherits = \"a\"\n", "a")
                  .status()
                  .message(),
              HasSubstr("inherits from itself"));
}

// ---- Cargo's JSON messages ----

constexpr char kBenchArtifact[] =
    R"({"reason":"compiler-artifact","package_id":"path+file:///w/hotlib#0.1.0",)"
    R"("manifest_path":"/w/hotlib/Cargo.toml","target":{"kind":["bench"],"crate_types":["bin"],)"
    R"("name":"hot","src_path":"/w/hotlib/benches/hot.rs"},"profile":{"opt_level":"3",)"
    R"("debuginfo":1,"test":true},"features":[],"filenames":["/w/t/release/deps/hot-1f"],)"
    R"("executable":"/w/t/release/deps/hot-1f","fresh":false})";

TEST(CargoArtifactTest, ReadsExecutableArtifacts) {
  std::optional<CargoArtifact> a = ParseCargoArtifact(kBenchArtifact);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->executable, "/w/t/release/deps/hot-1f");
  EXPECT_EQ(a->target_name, "hot");
  EXPECT_THAT(a->kinds, ElementsAre("bench"));
  EXPECT_EQ(a->manifest_path, "/w/hotlib/Cargo.toml");
  EXPECT_EQ(a->debuginfo, std::optional<uint32_t>(1));
}

TEST(CargoArtifactTest, IgnoresEverythingElse) {
  EXPECT_FALSE(ParseCargoArtifact(R"({"reason":"build-finished","success":true})"));
  EXPECT_FALSE(ParseCargoArtifact(
      R"({"reason":"compiler-artifact","target":{"kind":["lib"],"name":"l"},"executable":null})"));
  EXPECT_FALSE(ParseCargoArtifact("   Compiling hotlib v0.1.0"));
  EXPECT_FALSE(ParseCargoArtifact(R"({"reason":"compiler-artifact","executable":"/x")"));
  EXPECT_FALSE(ParseCargoArtifact(R"({"reason":"compiler-artifact","executable":"/x"})"));
}

TEST(CargoArtifactTest, BuildScriptLibraryPathsInTheTargetDirectoryLoad) {
  EXPECT_THAT(
      ParseBuildScriptLinkedPaths(
          R"({"reason":"build-script-executed","linked_libs":["dylib=nativeprof"],)"
          R"("linked_paths":["native=/w/t/release/build/np-1/out/lib","/usr/lib/x",)"
          R"("all=/opt/y"],"out_dir":"/w/t/release/build/np-1/out"})"),
      ElementsAre("/w/t/release/build/np-1/out/lib", "/usr/lib/x", "/opt/y"));
  EXPECT_THAT(ParseBuildScriptLinkedPaths(kBenchArtifact), IsEmpty());
  // Cargo adds only paths inside the target directory, then deps/ and the profile directory.
  EXPECT_EQ(CargoDylibPath("/w/t/release/deps/hot-1f",
                           {"/w/t/release/build/np-1/out/lib", "/usr/lib/x"}, "/old"),
            "/w/t/release/build/np-1/out/lib:/w/t/release/deps:/w/t/release:/old");
  EXPECT_EQ(CargoDylibPath("/w/t/dev/examples/demo", {}, ""), "/w/t/dev/deps:/w/t/dev");
}

TEST(CargoArtifactTest, SelectsTheRequestedTarget) {
  CargoArtifact bin{"/t/a", "a", {"bin"}, "/w/Cargo.toml", 1};
  CargoArtifact bin2{"/t/b", "b", {"bin"}, "/w/Cargo.toml", 1};
  CargoArtifact bench{"/t/hot-1", "hot", {"bench"}, "/w/Cargo.toml", 1};
  CargoOptions o;
  o.kind = CargoTargetKind::kBench;
  o.target_name = "hot";
  EXPECT_EQ(SelectArtifact(o, {bin, bench})->executable, "/t/hot-1");
  o.target_name = "cold";
  EXPECT_THAT(SelectArtifact(o, {bin, bench}).status().message(),
              HasSubstr("cargo built no bench named 'cold' (it built: bin a, bench hot)"));
  CargoOptions only;
  EXPECT_EQ(SelectArtifact(only, {bin})->executable, "/t/a");
  EXPECT_THAT(SelectArtifact(only, {bin, bin2}).status().message(),
              HasSubstr("several binaries (a, b); choose one with --bin NAME"));
}

}  // namespace
}  // namespace nativeprof::tools
