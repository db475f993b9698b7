// `nativeprof report` options through the built CLI, byte for byte against checked-in expected
// outputs (tests/testdata/report/): --focus, --hide, --by module (with and without the
// frame_modules table of FILE.json), --format json / markdown, a composition of all of them, and
// the one-line usage errors. After an intended format change regenerate the expected files with
// NATIVEPROF_UPDATE_GOLDEN=1 ./integration_test --gtest_filter='ReportCli*' and review the diff.
#include <cstdlib>
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/file_util.h"
#include "tests/testing/test_support.h"
#include "tools/exit_codes.h"

namespace nativeprof {
namespace {

using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::NativeprofBinary;
using testing::ReadFileOrEmpty;
using testing::RunCommand;
using testing::SourcePath;
using ::testing::StartsWith;

std::string DataDir() { return SourcePath("tests/testdata/report/"); }

// Runs `report FILE ARGS...` and compares stdout with tests/testdata/report/`expected`. The
// input's directory is cut from the output, so JSON and markdown name the file as "hot.folded"
// wherever the checkout is.
void ExpectReport(const std::string& input, const std::vector<std::string>& args,
                  const std::string& expected) {
  std::vector<std::string> argv = {NativeprofBinary(), "report", input};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::CommandResult r = RunCommand(argv);
  ASSERT_EQ(r.exit_code, tools::kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  const size_t slash = input.rfind('/');
  const std::string out = absl::StrReplaceAll(r.out, {{input.substr(0, slash + 1), ""}});
  const std::string path = DataDir() + expected;
  if (std::getenv("NATIVEPROF_UPDATE_GOLDEN") != nullptr) {
    NP_ASSERT_OK(WriteFileAtomically(path, out));
    return;
  }
  const std::string want = ReadFileOrEmpty(path);
  ASSERT_FALSE(want.empty()) << "missing expected file " << path;
  EXPECT_EQ(out, want) << expected << " differs; if the change is intended, regenerate (see "
                       << "the top of report_cli_test.cc)";
}

std::string Hot() { return DataDir() + "hot.folded"; }

TEST(ReportCliTest, Focus) {
  ExpectReport(Hot(), {"--focus", "^hotlib::build_table$"}, "focus.txt");
}

TEST(ReportCliTest, Hide) { ExpectReport(Hot(), {"--hide", "^(core|alloc|std)::"}, "hide.txt"); }

TEST(ReportCliTest, ByModule) { ExpectReport(Hot(), {"--by", "module"}, "by_module.txt"); }

TEST(ReportCliTest, ByModuleWithoutFrameModulesFallsBackToNames) {
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/hot.folded", ReadFileOrEmpty(Hot())));
  ExpectReport(dir + "/hot.folded", {"--by", "module"}, "by_module_no_json.txt");
}

// Valid JSON whose field has another type than record writes: one line and exit 5, not an
// uncaught exception (SIGABRT).
TEST(ReportCliTest, MetadataWithAFieldOfTheWrongTypeGivesOneLine) {
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/p.folded", "main;work 10\n"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/p.folded.json",
                                   R"({"off_cpu": {"threads": [{"tid": "a"}]}})"));
  testing::CommandResult r =
      testing::RunCommand({testing::NativeprofBinary(), "report", dir + "/p.folded"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("the metadata ", dir, "/p.folded.json has a field "
                                            "of an unexpected type")));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ReportCliTest, Json) { ExpectReport(Hot(), {"--format", "json", "-n", "4"}, "report.json"); }

TEST(ReportCliTest, Markdown) {
  ExpectReport(Hot(), {"--format", "markdown", "-n", "5"}, "report.md");
}

TEST(ReportCliTest, Composition) {
  ExpectReport(Hot(),
               {"--hide", "^(core|alloc|std)::", "--focus", "hotlib", "--by", "module", "--format",
                "markdown"},
               "composed.md");
  ExpectReport(Hot(),
               {"--hide", "^(core|alloc|std)::", "--focus", "hotlib", "--by", "module", "--format",
                "json", "-n", "3"},
               "composed.json");
}

TEST(ReportCliTest, JsonIsDeterministic) {
  const std::vector<std::string> argv = {
      NativeprofBinary(), "report", Hot(), "--format", "json", "--by", "module"};
  EXPECT_EQ(RunCommand(argv).out, RunCommand(argv).out);
}

TEST(ReportCliTest, BadOptionsGiveOneLineAndExitUsage) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const Case cases[] = {
      {{"--focus", "(hotlib"},
       "nativeprof: --focus '(hotlib' is not a valid regular expression (Unmatched ( or \\(); it "
       "is POSIX extended syntax, see regex(7)\n"},
      {{"--hide", "a[b"},
       "nativeprof: --hide 'a[b' is not a valid regular expression (Unmatched [, [^, [:, [., or "
       "[=); it is POSIX extended syntax, see regex(7)\n"},
      {{"--focus", "a", "--focus", "b"},
       "nativeprof: --focus given twice; give it once; combine patterns with '|', as in --focus "
       "'a|b'\n"},
      {{"--by", "dso"},
       "nativeprof: --by 'dso' is not a report key; use --by function or --by module\n"},
      {{"--format", "html"},
       "nativeprof: --format 'html' is not a report format; use text, json or markdown\n"},
      {{"--tree", "--format", "json"},
       "nativeprof: --tree prints text only; drop --tree or use --format text\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {NativeprofBinary(), "report", Hot()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    testing::CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, tools::kExitUsage) << c.args[0];
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.out, "");
  }
}

TEST(ReportCliTest, FocusOnNothingSaysSo) {
  testing::CommandResult r =
      RunCommand({NativeprofBinary(), "report", Hot(), "--focus", "no_such_fn"});
  ASSERT_EQ(r.exit_code, tools::kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("no samples through /no_such_fn/ (of 237)\n"));
}

}  // namespace
}  // namespace nativeprof
