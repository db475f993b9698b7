// The convert, report and diff subcommands through the built CLI: outputs, format selection,
// and the exit codes and one-line errors for bad input and unwritable outputs.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "output/folded_reader.h"
#include "tests/testing/test_support.h"
#include "tools/exit_codes.h"

namespace nativeprof {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::MakeTempDir;
using testing::NativeprofBinary;
using testing::ReadFileOrEmpty;
using testing::RunCommand;
using testing::SourcePath;

std::string Small() { return SourcePath("tests/testdata/output/small.folded"); }

TEST(OutputCliTest, ConvertWritesEveryFormatFromExtensionsAndFlags) {
  const std::string dir = MakeTempDir();
  testing::CommandResult r =
      RunCommand({NativeprofBinary(), "convert", Small(), dir + "/a.svg", "-o", dir + "/b.pb.gz",
                  "-o", dir + "/c.speedscope.json", "-o", dir + "/d.folded", "--format",
                  "folded", "-o", dir + "/e.txt", "--title", "My <title>"});
  ASSERT_EQ(r.exit_code, tools::kExitOk) << r.err;
  EXPECT_THAT(ReadFileOrEmpty(dir + "/a.svg"), StartsWith("<?xml"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/a.svg"), HasSubstr(">My &lt;title&gt;</text>"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/b.pb.gz"), StartsWith("\x1f\x8b"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/c.speedscope.json"),
              HasSubstr("\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
  EXPECT_EQ(ReadFileOrEmpty(dir + "/d.folded"),
            ReadFileOrEmpty(SourcePath("tests/testdata/output/small.folded.golden")));
  EXPECT_EQ(ReadFileOrEmpty(dir + "/e.txt"), ReadFileOrEmpty(dir + "/d.folded"));

  // --format overrides the extension.
  r = RunCommand({NativeprofBinary(), "convert", Small(), dir + "/x.folded", "--format", "svg"});
  ASSERT_EQ(r.exit_code, tools::kExitOk) << r.err;
  EXPECT_THAT(ReadFileOrEmpty(dir + "/x.folded"), StartsWith("<?xml"));
}

TEST(OutputCliTest, MalformedInputNamesTheLineAndExitsBadInput) {
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/bad.folded", "app;main 3\napp;main;f three\n"));
  for (const char* cmd : {"convert", "report", "diff"}) {
    std::vector<std::string> argv = {NativeprofBinary(), cmd, dir + "/bad.folded"};
    if (std::string(cmd) == "convert") argv.push_back(dir + "/out.svg");
    if (std::string(cmd) == "diff") argv.push_back(Small());
    testing::CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, tools::kExitBadInput) << cmd;
    EXPECT_THAT(r.err, StartsWith("nativeprof: " + dir + "/bad.folded:2: ")) << cmd;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  testing::CommandResult missing =
      RunCommand({NativeprofBinary(), "report", dir + "/does-not-exist.folded"});
  EXPECT_EQ(missing.exit_code, tools::kExitBadInput);
  EXPECT_THAT(missing.err, HasSubstr("does-not-exist.folded"));
  EXPECT_FALSE(std::ifstream(dir + "/out.svg").good());
}

// A time view's microseconds become nanoseconds: more than 64 bits hold is refused, not wrapped
// (a view of 18,446,744,073,709,551 us converted to -616 ns).
TEST(OutputCliTest, ATimeViewTooLongForNanosecondsIsRefused) {
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/p.offcpu.folded", "app;main;read 18446744073709551\n"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/p.folded.json", R"({"off_cpu": {"unit": "ns"}})"));
  for (const char* cmd : {"convert", "report"}) {
    std::vector<std::string> argv = {NativeprofBinary(), cmd, dir + "/p.offcpu.folded"};
    if (std::string(cmd) == "convert") argv.push_back(dir + "/out.pb.gz");
    testing::CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, tools::kExitBadInput) << cmd << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("more time than 64 bits of nanoseconds hold")) << cmd;
  }
  EXPECT_FALSE(std::ifstream(dir + "/out.pb.gz").good());
}

// Control bytes that reach a terminal can move the cursor, recolour or retitle it; only the
// final newline may be one.
bool HasRawControlBytes(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && !(c == '\n' && i + 1 == text.size())) || c == 0x7f) return true;
  }
  return false;
}

TEST(OutputCliTest, BinaryInputGivesOneEscapedLine) {
  const std::string dir = MakeTempDir();
  // An ELF header, then an escape sequence, a C1 CSI and a bidi override before the last space of
  // the first line: the part the reader quotes as the sample count.
  // (Literals are split where a hex escape would swallow the next letter.)
  constexpr char kHead[] = "\x7f" "ELF\x02\x01\x01\0\0\0 \x1b[2J\x07\xc2\x9b" "31m\xe2\x80\xae\xff";
  constexpr char kTail[] = "\n\0\x01\x02 junk\n";
  const std::string binary = std::string(kHead, sizeof(kHead) - 1) + std::string(3000, '\x1b') +
                             std::string(kTail, sizeof(kTail) - 1);
  NP_ASSERT_OK(WriteFileAtomically(dir + "/a.out", binary));
  // Endless (/dev/zero, which was read until memory ran out) or 1 GiB of zeros with no newline
  // (10 s to refuse): told from the first bytes.
  const std::string sparse = dir + "/sparse.folded";
  { std::ofstream(sparse).close(); }
  std::filesystem::resize_file(sparse, uintmax_t{1} << 30);
  // 64 KiB of blank lines and then anything: refused from the head too.
  const std::string blank = dir + "/blank.folded";
  { std::ofstream(blank) << std::string(70000, '\n'); }
  std::filesystem::resize_file(blank, uintmax_t{1} << 30);
  // A first line with control bytes in its thread name that parses is a line, not binary data.
  const std::string named = dir + "/named.folded";
  { std::ofstream(named) << "app\x01\x02\x03\x04\x05;main;work 10\napp;main;idle 5\n"; }
  EXPECT_EQ(RunCommand({NativeprofBinary(), "report", named}).exit_code, 0);
  for (const std::string& input : {dir + "/a.out", NativeprofBinary(), std::string("/dev/zero"),
                                   sparse, blank}) {
    for (const char* cmd : {"convert", "report", "diff"}) {
      std::vector<std::string> argv = {NativeprofBinary(), cmd, input};
      if (std::string(cmd) == "convert") argv.push_back(dir + "/out.svg");
      if (std::string(cmd) == "diff") argv.push_back(Small());
      testing::CommandResult r = RunCommand(argv);
      SCOPED_TRACE(cmd + (" " + input));
      EXPECT_EQ(r.exit_code, tools::kExitBadInput);
      EXPECT_THAT(r.err, StartsWith("nativeprof: " + input + (input == blank ? ": " : ":1: ")));
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_FALSE(HasRawControlBytes(r.err)) << r.err;
      // 80 quoted bytes, each at most 4 characters escaped, plus the file name and the advice.
      EXPECT_LT(r.err.size(), 320 + input.size() + 200) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
    }
  }
  testing::CommandResult r = RunCommand({NativeprofBinary(), "report", dir + "/a.out"});
  EXPECT_THAT(r.err, HasSubstr("a.out:1: binary data, not a folded profile; give a folded file"));
  // A pprof file, as record writes it to X.pb.gz: the reader says what it likely is.
  ASSERT_EQ(RunCommand({NativeprofBinary(), "convert", Small(), dir + "/p.pb.gz"}).exit_code, 0);
  r = RunCommand({NativeprofBinary(), "report", dir + "/p.pb.gz"});
  EXPECT_EQ(r.exit_code, tools::kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("p.pb.gz:1: gzip data (a pprof profile? record writes folded "
                               "stacks too with -o X.folded), not a folded profile"));
  EXPECT_FALSE(std::ifstream(dir + "/out.svg").good());
}

TEST(OutputCliTest, UnwritableOutputExitsOutput) {
  const std::string dir = MakeTempDir();
  testing::CommandResult r =
      RunCommand({NativeprofBinary(), "convert", Small(), dir + "/no/such/dir/out.svg"});
  EXPECT_EQ(r.exit_code, tools::kExitOutput) << r.err;
  EXPECT_THAT(r.err, StartsWith("nativeprof: "));
  r = RunCommand({NativeprofBinary(), "diff", Small(), Small(), "-o", dir + "/no/diff.svg"});
  EXPECT_EQ(r.exit_code, tools::kExitOutput) << r.err;
}

// Two outputs of one record run that are the same file (a view beside one -o named by another,
// or the metadata): refused before the command runs, instead of the later silently replacing
// the earlier (the off-CPU profile was lost under the CPU one's name).
TEST(OutputCliTest, RecordOutputsThatWouldBeOneFileAreRefused) {
  const std::string dir = MakeTempDir();
  for (const std::vector<std::string>& outputs :
       {std::vector<std::string>{"--off-cpu", "-o", dir + "/p.folded", "-o", dir + "/p.offcpu.folded"},
        std::vector<std::string>{"-o", dir + "/p.folded", "-o", dir + "/p.folded.json"},
        std::vector<std::string>{"--alloc", "-o", dir + "/p.folded", "-o", dir + "/p.alloc.folded"},
        // The same file spelled two ways (these were written over each other without a word).
        std::vector<std::string>{"--off-cpu", "-o", dir + "/p.folded", "-o",
                                 dir + "/./p.offcpu.folded"},
        std::vector<std::string>{"-o", dir + "/q.out", "--format", "svg", "-o",
                                 dir + "/../" + dir.substr(dir.rfind('/') + 1) + "/q.out"}}) {
    std::vector<std::string> argv = {NativeprofBinary(), "record"};
    argv.insert(argv.end(), outputs.begin(), outputs.end());
    argv.insert(argv.end(), {"--", "true"});
    testing::CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("would both write"));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "nothing was run";
}

// An output that is an input, or the metadata read with one, however spelled or linked: refused
// before anything is written (convert p.folded p.folded --format svg replaced the recording with
// its SVG; record -o ./bench -- ./bench replaced the program).
TEST(OutputCliTest, OutputsThatWouldReplaceAnInputAreRefused) {
  const std::string dir = MakeTempDir();
  const std::string folded = dir + "/p.alloc.folded";
  const std::string meta = dir + "/p.folded.json";
  std::filesystem::copy_file(Small(), folded);
  std::ofstream(meta) << "{\"allocations\": {}}\n";
  const std::string program = dir + "/prog";
  std::filesystem::copy_file("/bin/true", program);
  const std::string odd_program = dir + "/r.folded.json";  // as the metadata of -o r.folded
  std::filesystem::copy_file("/bin/true", odd_program);
  const std::string link = dir + "/link.svg";
  std::filesystem::create_hard_link(folded, link);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"convert", folded, folded, "--format", "svg"},
        std::vector<std::string>{"convert", folded, link},
        std::vector<std::string>{"convert", folded, "-o", dir + "/x.svg", "-o",
                                 dir + "/./p.folded.json"},
        std::vector<std::string>{"diff", Small(), folded, "-o", dir + "/../" +
                                 dir.substr(dir.rfind('/') + 1) + "/p.alloc.folded"},
        std::vector<std::string>{"record", "-o", program, "--", program},
        std::vector<std::string>{"record", "-o", dir + "/r.folded", "--", odd_program}}) {
    std::vector<std::string> argv = {NativeprofBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, tools::kExitUsage) << args[0] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("would replace")) << r.err;
  }
  EXPECT_EQ(ReadFileOrEmpty(folded), ReadFileOrEmpty(Small()));
  EXPECT_EQ(ReadFileOrEmpty(meta), "{\"allocations\": {}}\n");
  EXPECT_EQ(ReadFileOrEmpty(program), ReadFileOrEmpty("/bin/true"));
  EXPECT_EQ(ReadFileOrEmpty(odd_program), ReadFileOrEmpty("/bin/true"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.svg"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/r.folded"));
}

// An output that is plainly not a profile (a program, a script), the main one or one written
// beside it: refused before anything runs or is written (record -o ./np -- true replaced
// nativeprof itself with a 519-byte folded file).
TEST(OutputCliTest, OutputsThatAreProgramsOrScriptsAreRefused) {
  const std::string dir = MakeTempDir();
  const std::string program = dir + "/np";
  std::filesystem::copy_file(NativeprofBinary(), program);
  const std::string script = dir + "/q.alloc.folded";  // written beside -o q.folded with --alloc
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  const std::string beside = dir + "/r.folded.json";  // the metadata of -o r.folded
  std::filesystem::copy_file("/bin/true", beside);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"record", "-o", program, "--", "true"},
        std::vector<std::string>{"record", "-o", dir + "/x.svg", "-o", program, "--", "true"},
        std::vector<std::string>{"record", "--alloc", "-o", dir + "/q.folded", "--", "true"},
        std::vector<std::string>{"record", "-o", dir + "/r.folded", "--", "true"},
        std::vector<std::string>{"record", "-p", std::to_string(::getpid()), "--duration", "1",
                                 "-o", program},
        std::vector<std::string>{"convert", Small(), "-o", dir + "/y.svg", "-o", program},
        std::vector<std::string>{"diff", Small(), Small(), "-o", script}}) {
    std::vector<std::string> argv = {program};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::CommandResult r = RunCommand(argv);
    const std::string what = absl::StrJoin(args, " ");
    EXPECT_EQ(r.exit_code, tools::kExitUsage) << what << ": " << r.err;
    EXPECT_THAT(r.err, AnyOf(HasSubstr(" is an ELF executable"), HasSubstr(" is a script (#!)")))
        << what;
    EXPECT_THAT(r.err, HasSubstr("not a profile; nothing was overwritten; choose another"))
        << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
  }
  EXPECT_EQ(ReadFileOrEmpty(program), ReadFileOrEmpty(NativeprofBinary()));
  EXPECT_EQ(ReadFileOrEmpty(script), "#!/bin/sh\nexit 0\n");
  EXPECT_EQ(ReadFileOrEmpty(beside), ReadFileOrEmpty("/bin/true"));
  for (const char* never : {"/x.svg", "/y.svg", "/q.folded", "/r.folded", "/np.json"}) {
    EXPECT_FALSE(std::filesystem::exists(dir + never)) << never;
  }
}

TEST(OutputCliTest, BadArgumentsExitUsage) {
  const std::string dir = MakeTempDir();
  EXPECT_EQ(RunCommand({NativeprofBinary(), "convert", Small(), dir + "/o", "--format", "png"})
                .exit_code,
            tools::kExitUsage);
  testing::CommandResult chart =
      RunCommand({NativeprofBinary(), "convert", Small(), dir + "/c.svg", "--flamechart"});
  EXPECT_EQ(chart.exit_code, tools::kExitUsage);
  EXPECT_THAT(chart.err, HasSubstr("--flamechart needs samples in time order"));
  EXPECT_EQ(RunCommand({NativeprofBinary(), "diff", Small()}).exit_code, tools::kExitUsage);
  EXPECT_EQ(RunCommand({NativeprofBinary(), "diff", Small(), Small(), "--level", "2"}).exit_code,
            tools::kExitUsage);
  EXPECT_EQ(RunCommand({NativeprofBinary(), "report", Small(), "-n", "x"}).exit_code,
            tools::kExitUsage);
  testing::CommandResult help = RunCommand({NativeprofBinary(), "report", "--help"});
  EXPECT_EQ(help.exit_code, tools::kExitOk);
  EXPECT_THAT(help.out, HasSubstr("usage: nativeprof report"));
}

TEST(OutputCliTest, ReportPrintsTablesTreeAndCounters) {
  const std::string dir = MakeTempDir();
  const std::string folded = dir + "/p.folded";
  NP_ASSERT_OK(WriteFileAtomically(folded, ReadFileOrEmpty(Small())));
  NP_ASSERT_OK(WriteFileAtomically(
      folded + ".json",
      R"({"counters": {"task-clock": {"value": 101.5, "unit": "msec"}, "page-faults": 321}})"));
  testing::CommandResult r =
      RunCommand({NativeprofBinary(), "report", folded, "-n", "3", "--tree", "--depth", "3"});
  ASSERT_EQ(r.exit_code, tools::kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Top 3 functions by self share (of 100 samples)"));
  EXPECT_THAT(r.out, HasSubstr("  48.00%  38.46-57.68%              48    58.00%  hash_block\n"));
  EXPECT_THAT(r.out, HasSubstr("Call tree"));
  EXPECT_THAT(r.out, HasSubstr("  25.00%    0.00%      worker_loop\n"));
  EXPECT_THAT(r.out, HasSubstr("page-faults"));
  EXPECT_THAT(r.out, HasSubstr("msec"));

  // Default file name in the current directory is nativeprof.folded.
  testing::CommandResult none = RunCommand({NativeprofBinary(), "report"});
  if (!std::ifstream("nativeprof.folded").good()) {
    EXPECT_EQ(none.exit_code, tools::kExitBadInput);
    EXPECT_THAT(none.err, HasSubstr("nativeprof.folded"));
  }
}

TEST(OutputCliTest, DiffMarksTheChangedFunctionAndWritesSvg) {
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/before.folded",
                                   "app;main;hot 1000\napp;main;steady 9000\n"));
  NP_ASSERT_OK(WriteFileAtomically(dir + "/after.folded",
                                   "app;main;hot 4000\napp;main;steady 18000\n"));
  testing::CommandResult r = RunCommand({NativeprofBinary(), "diff", dir + "/before.folded",
                                         dir + "/after.folded", "-o", dir + "/d.svg"});
  ASSERT_EQ(r.exit_code, tools::kExitOk) << r.err;
  // hot: 10% -> 18.18%; steady: 90% -> 81.82%. Both real changes at this sample count.
  EXPECT_THAT(r.out, HasSubstr(" 10.00% ->  18.18%   +8.18 *"));
  EXPECT_THAT(r.out, HasSubstr("hot\n"));
  const std::string svg = ReadFileOrEmpty(dir + "/d.svg");
  EXPECT_THAT(svg, HasSubstr("Differential Flame Graph"));
  EXPECT_THAT(svg, HasSubstr("hot (4,000 samples, 18.18%; before 1,000 samples, 10.00%; "
                             "change +8.18%)"));
  EXPECT_THAT(svg, HasSubstr("fill=\"rgb(255,38,38)\""));  // the largest growth: full red
}

}  // namespace
}  // namespace nativeprof
