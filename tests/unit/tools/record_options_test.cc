#include "tools/record_options.h"

#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::tools {
namespace {

// The off-CPU and wall files beside an output, and back: record writes them with ViewPath, and
// report/diff/convert find the recording's metadata with ViewOfPath.
TEST(RecordOptionsTest, ViewPathsAndBack) {
  for (const std::string path :
       {"out.folded", "dir.v2/prof.svg", "p.pb.gz", "t.speedscope.json", "no_extension"}) {
    for (const char* view : {kOffCpuView, kWallView, kAllocBytesView, kAllocCountView,
                             kTemporaryView, kPeakView, kLeakedView, kHeapView}) {
      SCOPED_TRACE(path + " " + view);
      const std::string beside = RecordOptions::ViewPath(path, view);
      EXPECT_NE(beside, path);
      std::string main;
      EXPECT_EQ(RecordOptions::ViewOfPath(beside, &main), view);
      EXPECT_EQ(main, path);
    }
  }
  EXPECT_EQ(RecordOptions::ViewPath("out.folded", kOffCpuView), "out.offcpu.folded");
  EXPECT_EQ(RecordOptions::ViewPath("p.pb.gz", kWallView), "p.wall.pb.gz");
  std::string main;
  EXPECT_EQ(RecordOptions::ViewOfPath("out.folded", &main), "");
}

absl::StatusOr<RecordOptions> Parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseRecordOptions(static_cast<int>(argv.size()), argv.data());
}

TEST(RecordOptionsTest, AllocRateTakesBinarySuffixes) {
  EXPECT_EQ(*ParseAllocRate("1"), 1u);
  EXPECT_EQ(*ParseAllocRate("4096"), 4096u);
  EXPECT_EQ(*ParseAllocRate("512K"), 512u * 1024);
  EXPECT_EQ(*ParseAllocRate("2m"), 2u << 20);
  EXPECT_EQ(*ParseAllocRate("1G"), 1u << 30);
  for (const char* bad : {"", "0", "K", "-1", "1.5M", "12Q", "99999999999999999999", " 1", "1 ",
                          "512 K", "+1"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseAllocRate(bad).ok());
  }
}

// A duration whose deadline the clock cannot hold is refused: "inf" and 1e10 used to stop the
// run after 0.1 s (the overflowed deadline lay in the past).
TEST(RecordOptionsTest, DurationIsAPositiveNumberTheClockCanHold) {
  absl::StatusOr<RecordOptions> ok = Parse({"record", "-p", "1", "--duration", "2.5"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->duration_seconds, 2.5);
  EXPECT_TRUE(Parse({"record", "-p", "1", "--duration", "1e9"}).ok());
  for (const char* bad : {"0", "-1", "nan", "inf", "1e10", "abc", ""}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<RecordOptions> r = Parse({"record", "-p", "1", "--duration", bad});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("leave --duration out"), absl::string_view::npos)
        << r.status();
  }
}

TEST(RecordOptionsTest, AllocOptionAndItsRefusals) {
  absl::StatusOr<RecordOptions> plain = Parse({"record", "--alloc", "--", "true"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->alloc_rate_bytes, kDefaultAllocRate);
  absl::StatusOr<RecordOptions> every = Parse({"record", "--alloc=1", "--", "true"});
  ASSERT_TRUE(every.ok()) << every.status();
  EXPECT_EQ(every->alloc_rate_bytes, 1u);
  EXPECT_FALSE(Parse({"record", "--", "true"})->alloc_rate_bytes.has_value());
  // A rate left out after '=' is a mistake, not the default.
  absl::StatusOr<RecordOptions> empty = Parse({"record", "--alloc=", "--", "true"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("--alloc=: give the mean bytes"), absl::string_view::npos)
      << empty.status();
  // A rate given apart from --alloc is read as the command: said so.
  absl::StatusOr<RecordOptions> apart = Parse({"record", "--alloc", "64K", "--", "true"});
  ASSERT_FALSE(apart.ok());
  EXPECT_EQ(apart.status().message(),
            "--alloc 64K: the rate is joined by '=' (--alloc=64K), else it is read as the command");
  // After "--" it is the command, whatever its name.
  absl::StatusOr<RecordOptions> named = Parse({"record", "--alloc", "--", "64K"});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->command, std::vector<std::string>{"64K"});
  absl::StatusOr<RecordOptions> attach = Parse({"record", "--alloc", "-p", "1"});
  ASSERT_FALSE(attach.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(attach.status()));
  absl::StatusOr<RecordOptions> fp = Parse({"record", "--alloc", "--call-graph", "fp", "--", "true"});
  ASSERT_FALSE(fp.ok());
  EXPECT_NE(fp.status().message().find("--call-graph dwarf"), absl::string_view::npos);
}

// A ring that holds no sample drops every one: refused, with the -m that would do.
TEST(RecordOptionsTest, ARingTooSmallForOneSampleIsRefused) {
  const long page = ::sysconf(_SC_PAGESIZE);
  ASSERT_EQ(page, 4096) << "the figures below assume 4 KiB pages";
  absl::StatusOr<RecordOptions> small = Parse({"record", "-m", "1", "--", "true"});
  ASSERT_FALSE(small.ok());
  EXPECT_THAT(small.status().message(),
              ::testing::HasSubstr("-m 1: a ring of 4 KiB holds no sample with its 8192-byte "
                                   "stack copy; give -m 4 or more"));
  EXPECT_TRUE(Parse({"record", "-m", "4", "--", "true"}).ok());
  EXPECT_TRUE(Parse({"record", "-m", "1", "--call-graph", "dwarf,1024", "--", "true"}).ok());
  EXPECT_TRUE(Parse({"record", "-m", "1", "--call-graph", "fp", "--", "true"}).ok());
}

TEST(RecordOptionsTest, NoCpuRecordsAllocationsOnly) {
  absl::StatusOr<RecordOptions> only = Parse({"record", "--alloc", "--no-cpu", "--", "true"});
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_FALSE(only->cpu_samples());
  EXPECT_TRUE(sampler::IsNoSamplesEvent(only->event));
  EXPECT_TRUE(Parse({"record", "--alloc", "--", "true"})->cpu_samples());
  // Nothing else to record, or a CPU half that would be empty: refused, naming the option.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"record", "--no-cpu", "--", "true"},
        std::vector<std::string>{"record", "--alloc", "--no-cpu", "--off-cpu", "--", "true"},
        std::vector<std::string>{"record", "--alloc", "--no-cpu", "--wall", "--", "true"},
        std::vector<std::string>{"record", "--alloc", "--no-cpu", "-e", "task-clock", "--",
                                 "true"}}) {
    absl::StatusOr<RecordOptions> bad = Parse(args);
    ASSERT_FALSE(bad.ok()) << args[2];
    EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
    EXPECT_NE(bad.status().message().find("--no-cpu"), absl::string_view::npos);
  }
  // Without --alloc as well, the advice is the conflict's: adding --alloc would only meet it.
  absl::StatusOr<RecordOptions> both = Parse({"record", "--no-cpu", "--off-cpu", "--", "true"});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(),
            "--no-cpu records allocations only; drop --off-cpu or --no-cpu");
}

}  // namespace
}  // namespace nativeprof::tools
