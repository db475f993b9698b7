// pprof output read back by the real `go tool pprof` (Debian's golang-go): the stacks and counts
// of -traces and the flat/cum figures of -top must match what the folded input says.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "base/file_util.h"
#include "output/folded_reader.h"
#include "output/folded_writer.h"
#include "output/function_stats.h"
#include "output/pprof_writer.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using testing::MakeTempDir;
using testing::RunCommand;

bool HaveGo(std::string* why) {
  testing::CommandResult r = RunCommand({"sh", "-c", "command -v go"});
  if (r.exit_code != 0) {
    *why = "go is not installed (tools/setup.sh installs golang-go)";
    return false;
  }
  return true;
}

#define SKIP_WITHOUT_GO()                        \
  do {                                           \
    std::string why_;                            \
    if (!HaveGo(&why_)) GTEST_SKIP() << why_;    \
  } while (0)

testing::CommandResult Pprof(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"timeout", "100", "go", "tool", "pprof"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

// Parses `go tool pprof -traces` into folded lines ("thread;root;...;leaf" -> count). Inlined
// frames ("name (inline)") get the _[i] suffix back.
std::map<std::string, uint64_t> ParseTraces(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::string thread;
  std::vector<std::string> frames;  // leaf first
  uint64_t count = 0;
  auto flush = [&] {
    if (frames.empty()) return;
    std::string line = thread;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) absl::StrAppend(&line, ";", *it);
    out[line] += count;
    frames.clear();
  };
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(raw, "-----------+")) {
      flush();
      continue;
    }
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (absl::ConsumePrefix(&line, "thread:")) {
      thread = std::string(absl::StripAsciiWhitespace(line));
      continue;
    }
    if (line.empty() || raw.size() < 12 || raw[11] != ' ') continue;  // headers
    absl::string_view name = line;
    absl::string_view head = raw.substr(0, 11);
    if (!absl::StripAsciiWhitespace(head).empty()) {
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(head), &count)) continue;
      name = absl::StripAsciiWhitespace(raw.substr(11));
    }
    std::string frame(name);
    if (absl::ConsumeSuffix(&name, " (inline)")) frame = absl::StrCat(name, "_[i]");
    frames.push_back(frame);
  }
  flush();
  return out;
}

TEST(OutputPprofTest, GoToolPprofReadsBackTheSameStacksAndCounts) {
  SKIP_WITHOUT_GO();
  // Names pprof prints verbatim (it shortens C++ template and argument lists in reports).
  const std::string folded =
      "app;_start;main;compute;hash_block 40\n"
      "app;_start;main;compute;hash_block;memcpy_avx 10\n"
      "app;_start;main;compute;push_back_[i] 6\n"
      "app;_start;main;parse;read;entry_SYSCALL_64_[k];ksys_read_[k] 12\n"
      "app;_start;main 2\n"
      "worker;start_thread;loop;compute;hash_block 30\n";
  NP_ASSERT_OK_AND_ASSIGN(symbolize::Profile p, output::ParseFolded(folded));
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/p.pb.gz", output::RenderPprof(p)));

  testing::CommandResult traces = Pprof({"-traces", dir + "/p.pb.gz"});
  ASSERT_EQ(traces.exit_code, 0) << traces.err;
  std::map<std::string, uint64_t> expected;
  for (absl::string_view line : absl::StrSplit(folded, '\n', absl::SkipEmpty())) {
    const size_t sp = line.rfind(' ');
    std::string stack(line.substr(0, sp));
    // A folded file keeps no mappings, so pprof cannot tell kernel frames apart: drop _[k].
    stack = absl::StrReplaceAll(stack, {{"_[k]", ""}});
    uint64_t n = 0;
    ASSERT_TRUE(absl::SimpleAtoi(line.substr(sp + 1), &n));
    expected[stack] += n;
  }
  EXPECT_EQ(ParseTraces(traces.out), expected) << traces.out;

  // -top: flat and cum per function equal the folded self and total counts.
  testing::CommandResult top =
      Pprof({"-top", "-nodefraction=0", "-nodecount=100", dir + "/p.pb.gz"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_THAT(top.out, ::testing::HasSubstr("of 100 total"));
  const output::FunctionTable table = output::CountFunctions(p);
  std::map<std::string, std::pair<uint64_t, uint64_t>> want;
  for (const output::FunctionCounts& f : table.functions) {
    std::string name = absl::StrReplaceAll(f.name, {{"_[k]", ""}, {"_[i]", " (inline)"}});
    want[name] = {f.self, f.total};
  }
  std::map<std::string, std::pair<uint64_t, uint64_t>> got;
  for (absl::string_view line : absl::StrSplit(top.out, '\n')) {
    std::vector<absl::string_view> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cols.size() < 6 || !absl::EndsWith(cols[1], "%")) continue;
    uint64_t flat = 0, cum = 0;
    if (!absl::SimpleAtoi(cols[0], &flat) || !absl::SimpleAtoi(cols[3], &cum)) continue;
    const size_t name_at = line.find(cols[5], line.find(cols[4]) + cols[4].size());
    got[std::string(line.substr(name_at))] = {flat, cum};
  }
  EXPECT_EQ(got, want) << top.out;
}

TEST(OutputPprofTest, RecordedProfileShowsCpuTimeAndSampleCounts) {
  SKIP_WITHOUT_GO();
  using symbolize::ProfileFrameKind;
  symbolize::Profile p;
  p.event = "cpu-clock";
  p.weight_unit = "nanoseconds";
  p.sample_frequency_hz = 1000;
  p.duration_ns = 1500000000;
  p.frames = {{"main", ProfileFrameKind::kUser, "/usr/bin/app", "0badc0de", 0x1100, "app.cc", 10},
              {"spin", ProfileFrameKind::kUser, "/usr/bin/app", "0badc0de", 0x1200, "app.cc", 20},
              {"sleep_a_bit", ProfileFrameKind::kUser, "/lib/libc.so.6", "", 0x9000, "", 0}};
  // spin: 3 samples of 2 ms; sleep_a_bit: 1 sample of 6 ms. Shares differ by value type.
  p.stacks.push_back({"app", 7, 7, {0, 1}, 3, 6000000});
  p.stacks.push_back({"app", 7, 7, {0, 2}, 1, 6000000});
  const std::string dir = MakeTempDir();
  NP_ASSERT_OK(WriteFileAtomically(dir + "/r.pb.gz", output::RenderPprof(p)));

  testing::CommandResult cpu = Pprof({"-top", dir + "/r.pb.gz"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_THAT(cpu.out, ::testing::HasSubstr("Type: cpu"));
  EXPECT_THAT(cpu.out, ::testing::HasSubstr("Duration: 1.50s"));
  EXPECT_THAT(cpu.out, ::testing::ContainsRegex("6ms +50\\.00%.*spin"));
  EXPECT_THAT(cpu.out, ::testing::ContainsRegex("6ms +50\\.00%.*sleep_a_bit"));

  testing::CommandResult samples = Pprof({"-top", "-sample_index=samples", dir + "/r.pb.gz"});
  ASSERT_EQ(samples.exit_code, 0) << samples.err;
  EXPECT_THAT(samples.out, ::testing::ContainsRegex("3 +75\\.00%.*spin"));

  testing::CommandResult raw = Pprof({"-raw", dir + "/r.pb.gz"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_THAT(raw.out, ::testing::HasSubstr("samples/count cpu/nanoseconds"));
  EXPECT_THAT(raw.out, ::testing::HasSubstr("/usr/bin/app"));
  EXPECT_THAT(raw.out, ::testing::HasSubstr("0badc0de"));
  EXPECT_THAT(raw.out, ::testing::HasSubstr("thread:[app]"));
}

}  // namespace
}  // namespace nativeprof
