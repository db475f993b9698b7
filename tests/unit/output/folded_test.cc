#include <random>
#include <string>

#include "absl/status/status.h"
#include "base/file_util.h"
#include "output/folded_reader.h"
#include "output/folded_writer.h"
#include "output/profile_writer.h"
#include "symbolize/demangle.h"
#include "symbolize/profile.h"
#include "tests/testing/test_support.h"

namespace nativeprof::output {
namespace {

using symbolize::Profile;
using symbolize::ProfileFrame;
using symbolize::ProfileFrameKind;
using symbolize::ProfileStack;
using ::testing::HasSubstr;

// Moved from symbolize's demangle_test with the function: escaping for folded output is output/'s.
TEST(EscapeFoldedFrameTest, ReplacesSeparatorsKeepsSpaces) {
  EXPECT_EQ(EscapeFoldedFrame("a;b"), "a:b");
  EXPECT_EQ(EscapeFoldedFrame("x\ny\rz"), "x y z");
  EXPECT_EQ(EscapeFoldedFrame("foo(int, char const*) const [clone .cold]"),
            "foo(int, char const*) const [clone .cold]");
  EXPECT_EQ(EscapeFoldedFrame(symbolize::DemangleSymbol("_RIC0KRe3b0a_E", {})), "::<\":\\n\">");
}

uint32_t AddFrame(Profile& p, const std::string& name,
                  ProfileFrameKind kind = ProfileFrameKind::kUser) {
  ProfileFrame f;
  f.function = name;
  f.kind = kind;
  p.frames.push_back(f);
  return static_cast<uint32_t>(p.frames.size() - 1);
}

void AddStack(Profile& p, const std::string& comm, int pid, int tid,
              std::vector<uint32_t> frames, uint64_t samples) {
  ProfileStack s;
  s.thread_name = comm;
  s.pid = pid;
  s.tid = tid;
  s.frames = std::move(frames);
  s.samples = samples;
  s.weight = samples * 1000000;
  p.stacks.push_back(std::move(s));
}

TEST(FoldedWriterTest, MergesThreadsSortsAndAnnotates) {
  Profile p;
  uint32_t main_f = AddFrame(p, "main");
  uint32_t work = AddFrame(p, "work");
  uint32_t sys = AddFrame(p, "do_syscall_64", ProfileFrameKind::kKernel);
  uint32_t inl = AddFrame(p, "inlined_helper", ProfileFrameKind::kInlined);
  uint32_t jit = AddFrame(p, "jitted", ProfileFrameKind::kJit);
  AddStack(p, "app", 10, 10, {main_f, work}, 5);
  AddStack(p, "app", 10, 11, {main_f, work}, 3);  // other tid: merges
  AddStack(p, "app", 12, 12, {main_f, work}, 2);  // other pid: merges
  AddStack(p, "app", 10, 10, {main_f, work, sys}, 4);
  AddStack(p, "app", 10, 10, {main_f, inl, jit}, 1);
  AddStack(p, "app", 10, 10, {main_f}, 0);  // no samples: left out
  AddStack(p, "Worker", 10, 13, {work}, 7);
  EXPECT_EQ(RenderFolded(p),
            "Worker;work 7\n"
            "app;main;inlined_helper_[i];jitted_[j] 1\n"
            "app;main;work 10\n"
            "app;main;work;do_syscall_64_[k] 4\n");
}

TEST(FoldedWriterTest, SanitizesSeparatorsButKeepsSpaces) {
  Profile p;
  uint32_t a = AddFrame(p, "operator()(int; char)\nx");
  uint32_t b = AddFrame(p, "std::vector<int>::push_back(int const&) const");
  uint32_t c = AddFrame(p, "");
  AddStack(p, "my;comm", 1, 1, {a, b, c}, 2);
  const std::string text = RenderFolded(p);
  EXPECT_EQ(text,
            "my:comm;operator()(int: char) x;std::vector<int>::push_back(int const&) const;"
            "[unknown] 2\n");
  // It parses back to the same names.
  NP_ASSERT_OK_AND_ASSIGN(Profile back, ParseFolded(text));
  ASSERT_EQ(back.stacks.size(), 1u);
  ASSERT_EQ(back.stacks[0].frames.size(), 3u);
  EXPECT_EQ(back.frames[back.stacks[0].frames[1]].function,
            "std::vector<int>::push_back(int const&) const");
  EXPECT_EQ(back.stacks[0].samples, 2u);
}

TEST(FoldedWriterTest, DeterministicAcrossInputOrder) {
  Profile p1, p2;
  for (Profile* p : {&p1, &p2}) {
    AddFrame(*p, "a");
    AddFrame(*p, "b");
  }
  AddStack(p1, "t", 1, 1, {0, 1}, 3);
  AddStack(p1, "t", 1, 1, {1}, 4);
  AddStack(p2, "t", 1, 1, {1}, 4);
  AddStack(p2, "t", 1, 1, {0, 1}, 3);
  EXPECT_EQ(RenderFolded(p1), RenderFolded(p2));
}

TEST(FoldedReaderTest, ParsesKindsThreadsAndSumsDuplicates) {
  NP_ASSERT_OK_AND_ASSIGN(
      Profile p, ParseFolded("app;main;work;sys_read_[k] 4\n"
                             "\n"
                             "app;main;inl_[i];jit_[j] 1\r\n"
                             "app;main;work;sys_read_[k] 6\n"
                             "other;main 2"));
  ASSERT_EQ(p.stacks.size(), 3u);
  EXPECT_EQ(p.stacks[0].thread_name, "app");
  EXPECT_EQ(p.stacks[0].samples, 10u);
  EXPECT_EQ(p.stacks[0].weight, 10u);
  EXPECT_EQ(p.weight_unit, "samples");
  ASSERT_EQ(p.stacks[0].frames.size(), 3u);
  const ProfileFrame& leaf = p.frames[p.stacks[0].frames[2]];
  EXPECT_EQ(leaf.function, "sys_read");
  EXPECT_EQ(leaf.kind, ProfileFrameKind::kKernel);
  EXPECT_EQ(p.frames[p.stacks[1].frames[1]].kind, ProfileFrameKind::kInlined);
  EXPECT_EQ(p.frames[p.stacks[1].frames[2]].kind, ProfileFrameKind::kJit);
  EXPECT_EQ(p.frames[p.stacks[1].frames[2]].function, "jit");
  // "main" is interned once.
  EXPECT_EQ(p.stacks[0].frames[0], p.stacks[2].frames[0]);
  EXPECT_EQ(p.stacks[2].thread_name, "other");
  EXPECT_EQ(p.stacks[2].samples, 2u);
}

TEST(FoldedWriterTest, BlankNamesAreWrittenAsUnknownSoTheLineParsesBack) {
  // A thread of carriage returns with no frames once became the line "  2", which has no stack.
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded("\r\r\t2\n\t;main;  ; 3\n"));
  const std::string text = RenderFolded(p);
  EXPECT_EQ(text, "[unknown] 2\n[unknown];main;[unknown];[unknown] 3\n");
  NP_ASSERT_OK_AND_ASSIGN(Profile again, ParseFolded(text));
  ASSERT_EQ(again.stacks.size(), 2u);
  EXPECT_EQ(again.stacks[0].samples + again.stacks[1].samples, 5u);
}

TEST(FoldedReaderTest, RoundTripIsByteIdentical) {
  const std::string text =
      "Worker;work 7\n"
      "app;main;inlined_helper_[i];jitted_[j] 1\n"
      "app;main;work 10\n"
      "app;main;work;do_syscall_64_[k] 4\n";
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded(text));
  EXPECT_EQ(RenderFolded(p), text);
}

TEST(FoldedReaderTest, ErrorsNameTheLine) {
  auto missing = ParseFolded("a;b 1\nno_count_here\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("line 2"));

  auto bad = ParseFolded("a;b 1\n\na;c x12\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("line 3"));
  EXPECT_THAT(bad.status().message(), HasSubstr("x12"));

  auto negative = ParseFolded("a;b -1\n");
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("line 1"));
}

TEST(FoldedReaderTest, CountsPastTheLargestSignedValueAreRejected) {
  // The total stays within 2^63 - 1, pprof's largest value (a count of 2^64 - 1 became -1 in
  // pprof), whether on one stack or across stacks.
  for (const char* text : {"a;b 9223372036854775807\na;b 1\n",
                           "a;b 4611686018427387904\na;c 4611686018427387904\n",
                           "a;b 1\na;b 18446744073709551615\n",
                           "a;b 1\na;b 18446744073709551616\n"}) {
    absl::StatusOr<Profile> p = ParseFolded(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(p.status().message(), HasSubstr("line 2: sample count "));
    EXPECT_THAT(p.status().message(), HasSubstr("beyond 2^63 - 1"));
  }
  NP_ASSERT_OK_AND_ASSIGN(Profile full, ParseFolded("a;b 9223372036854775806\na;c 1\n"));
  EXPECT_EQ(full.stacks[0].samples + full.stacks[1].samples, kMaxFoldedTotal);
  // What is not a count, and what is not text at all, say so.
  EXPECT_THAT(ParseFolded("a;b 12x\n").status().message(),
              HasSubstr("'12x' is not a non-negative integer"));
  EXPECT_THAT(ParseFolded("a;b 1 \n").status().message(),
              HasSubstr("line 1 ends in a space"));
  EXPECT_THAT(ParseFolded(std::string("\x1f\x8b\x08\0\0\0\x03" "junk\n", 12)).status().message(),
              HasSubstr("line 1: gzip data (a pprof profile? record writes folded stacks too with "
                        "-o X.folded), not a folded profile"));
  EXPECT_THAT(ParseFolded(std::string("\x7f" "ELF\x02\x01\x01\0\0\0\n", 11)).status().message(),
              HasSubstr("line 1: binary data, not a folded profile"));
  // An uncompressed pprof file starts with a newline byte: its first non-blank line says so.
  const std::string pprof("\n\n\x04\x08\x01\x10\x02\x1a\x03junk\n", 13);
  EXPECT_THAT(ParseFolded(pprof).status().message(),
              HasSubstr("line 3: binary data, not a folded profile"));
  EXPECT_THAT(ParseFolded("{\n  \"samples\": 3\n}\n").status().message(),
              HasSubstr("line 1: JSON (a recording's metadata, or a speedscope file)"));
  // A frame name may hold any byte: a line that parses is a line.
  EXPECT_TRUE(ParseFolded(std::string("a;b\0\x01\x02\x03\x04\x05 1\n", 12)).ok());
}

TEST(FoldedReaderTest, ErrorsQuoteTheLineEscapedAndShort) {
  const std::string line = "\x1b]0;title\x07" + std::string(100000, 'z');
  auto p = ParseFolded("a;b 1\n" + line + "\n");
  ASSERT_FALSE(p.ok());
  const std::string message(p.status().message());
  EXPECT_THAT(message, ::testing::StartsWith("line 2: '\\x1b]0;title\\x07zzz"));
  EXPECT_THAT(message, HasSubstr("... (99930 more bytes)' has no sample count"));
  EXPECT_LT(message.size(), 250u);
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
}

TEST(FoldedReaderTest, VeryLongLineParses) {
  // A million frames on one line (and a megabyte-long name): linear work, one stack.
  std::string line = "app";
  for (int i = 0; i < 1000000; ++i) line += i % 2 == 0 ? ";f" : ";g";
  line += ";" + std::string(1 << 20, 'n') + " 5\n";
  NP_ASSERT_OK_AND_ASSIGN(Profile p, ParseFolded(line));
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks[0].frames.size(), 1000001u);
  EXPECT_EQ(p.frames.size(), 3u);
  EXPECT_EQ(p.stacks[0].samples, 5u);
}

TEST(FoldedReaderTest, FileErrors) {
  auto missing = ReadFoldedFile("/nonexistent/dir/x.folded");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);

  const std::string dir = testing::MakeTempDir();
  const std::string path = dir + "/bad.folded";
  NP_ASSERT_OK(WriteFileAtomically(path, "a;b 1\na;b;c zz\n"));
  auto bad = ReadFoldedFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr(path + ":2:"));
}

TEST(ProfileWriterTest, FormatNamesAndExtensions) {
  EXPECT_EQ(*ParseOutputFormat("folded"), OutputFormat::kFolded);
  EXPECT_EQ(*ParseOutputFormat("svg"), OutputFormat::kSvg);
  EXPECT_EQ(*ParseOutputFormat("pprof"), OutputFormat::kPprof);
  EXPECT_EQ(*ParseOutputFormat("speedscope"), OutputFormat::kSpeedscope);
  EXPECT_EQ(ParseOutputFormat("png").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FormatFromPath("out.svg"), OutputFormat::kSvg);
  EXPECT_EQ(FormatFromPath("out.pb.gz"), OutputFormat::kPprof);
  EXPECT_EQ(FormatFromPath("out.pprof"), OutputFormat::kPprof);
  EXPECT_EQ(FormatFromPath("out.pb"), OutputFormat::kPprof);
  EXPECT_EQ(FormatFromPath("out.speedscope.json"), OutputFormat::kSpeedscope);
  EXPECT_EQ(FormatFromPath("out.json"), OutputFormat::kFolded);
  EXPECT_EQ(FormatFromPath("nativeprof.folded"), OutputFormat::kFolded);
  EXPECT_EQ(FormatFromPath("out.txt"), OutputFormat::kFolded);
}

TEST(ProfileWriterTest, WriteProfileWritesAndReportsErrors) {
  Profile p;
  AddFrame(p, "main");
  AddStack(p, "app", 1, 1, {0}, 3);
  const std::string dir = testing::MakeTempDir();
  NP_ASSERT_OK(WriteProfile(p, dir + "/x.folded", OutputFormat::kFolded, {}));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir + "/x.folded"), "app;main 3\n");
  absl::Status st = WriteProfile(p, dir + "/no/such/dir/x.folded", OutputFormat::kFolded, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace nativeprof::output

namespace nativeprof::output {
namespace {

// Arbitrary bytes never crash the reader: it either parses them or names a line.
TEST(FoldedReaderTest, ArbitraryInputIsParsedOrRejectedWithALineNumber) {
  std::mt19937 rng(12345);
  const std::string alphabet = "ab;; _[k]i]j\n\r\t0123456789-+x\xff";
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const int len = static_cast<int>(rng() % 80);
    for (int i = 0; i < len; ++i) text.push_back(alphabet[rng() % alphabet.size()]);
    absl::StatusOr<symbolize::Profile> p = ParseFolded(text);
    if (p.ok()) {
      // Whatever parsed renders back to something that parses to the same sample total.
      uint64_t total = 0;
      for (const auto& s : p->stacks) total += s.samples;
      absl::StatusOr<symbolize::Profile> again = ParseFolded(RenderFolded(*p));
      ASSERT_TRUE(again.ok()) << again.status();
      uint64_t total_again = 0;
      for (const auto& s : again->stacks) total_again += s.samples;
      EXPECT_EQ(total, total_again);
    } else {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(p.status().message()), ::testing::StartsWith("line "));
    }
  }
}

}  // namespace
}  // namespace nativeprof::output
