// End-to-end tests of `record --alloc` (issue 13) against programs whose allocations are known by
// construction (tests/targets/alloc_workload.c): the exact totals must equal the construction,
// the sampled call sites must carry the right shares (exact counts with --alloc=1), and the
// program must behave exactly as without the preload.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;

struct AllocRecording {
  CommandResult result;
  std::string folded;
  nlohmann::json exact;  // metadata "allocations"."exact"
  nlohmann::json allocations;
  nlohmann::json unwind;  // metadata "unwind"

  FoldedProfile View(const std::string& view) const {
    return FoldedProfile::Parse(
        ReadFileOrEmpty(absl::StrCat(folded.substr(0, folded.size() - 7), ".", view, ".folded")));
  }
};

AllocRecording RecordAlloc(const std::string& rate_option, const std::vector<std::string>& command,
                           const std::vector<std::string>& extra = {}) {
  AllocRecording rec;
  rec.folded = MakeTempDir() + "/alloc.folded";
  std::vector<std::string> argv = {NativeprofBinary(), "record", "--no-counters", rate_option,
                                   "-o", rec.folded};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  rec.result = RunCommand(argv);
  nlohmann::json meta =
      nlohmann::json::parse(ReadFileOrEmpty(rec.folded + ".json"), nullptr, false);
  if (meta.is_object() && meta.contains("allocations")) {
    rec.allocations = meta["allocations"];
    rec.exact = rec.allocations["exact"];
  }
  if (meta.is_object() && meta.contains("unwind")) rec.unwind = meta["unwind"];
  return rec;
}

uint64_t Exact(const AllocRecording& rec, const char* key) {
  return rec.exact.contains(key) ? rec.exact[key].get<uint64_t>() : ~uint64_t{0};
}

// The construction of `alloc_workload sites` (see its header comment). Temporary: the small ones
// (each freed with nothing in between).
void ExpectSitesTotals(const AllocRecording& rec, uint64_t times) {
  EXPECT_EQ(Exact(rec, "allocation_calls"), times * 1'326'210);
  EXPECT_EQ(Exact(rec, "allocated_bytes"), times * 209'725'200);
  EXPECT_EQ(Exact(rec, "free_calls"), times * 1'326'200);
  EXPECT_EQ(Exact(rec, "temporary_allocations"), times * 1'310'720);
  EXPECT_EQ(Exact(rec, "leaked_bytes"), times * 10'000);
  EXPECT_EQ(Exact(rec, "leaked_blocks"), times * 10);
}

// The live heap over time holds the exact peak, within the run, however short: it is read as
// the profiler drains, and a run shorter than a drain showed only its end.
void ExpectSeriesHoldsThePeak(const AllocRecording& rec) {
  const nlohmann::json& points = rec.allocations["live_heap_over_time"]["points"];
  ASSERT_GE(points.size(), 2u) << points.dump();
  uint64_t most = 0, previous = 0;
  for (const nlohmann::json& p : points) {
    EXPECT_GE(p[0].get<uint64_t>(), previous) << points.dump();  // in time order
    previous = p[0].get<uint64_t>();
    most = std::max(most, p[1].get<uint64_t>());
  }
  EXPECT_EQ(most, Exact(rec, "peak_heap_bytes")) << points.dump();
  EXPECT_NE(points.front()[1].get<uint64_t>() + points.back()[1].get<uint64_t>(), 2 * most)
      << "the peak is an end of the series: " << points.dump();
}

TEST(AllocTest, TotalsEqualTheConstructionAndSitesTheirShares) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "sites", "8"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  ASSERT_TRUE(rec.exact.is_object()) << rec.result.err;
  ExpectSitesTotals(rec, 8);
  // The medium live set on top of every round's leak: the last round's is the peak.
  EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 8 * 10'000u + 62'914'560u);
  ASSERT_EQ(rec.allocations["per_process"].size(), 1u);
  EXPECT_EQ(rec.allocations["per_process"][0]["peak_heap_bytes"].get<uint64_t>(),
            8 * 10'000u + 62'914'560u);
  EXPECT_EQ(rec.allocations["per_process"][0]["command"], "alloc_workload");
  EXPECT_THAT(rec.result.err, HasSubstr("allocations: 10,609,680 calls"));
  EXPECT_THAT(rec.result.err, HasSubstr("peak heap 63.0 MB"));
  ExpectSeriesHoldsThePeak(rec);

  // Sampled at the default rate: byte shares of 60 / 30 / 10 % within 3 points.
  FoldedProfile bytes = rec.View("alloc");
  ASSERT_TRUE(bytes.errors().empty()) << bytes.errors().front();
  EXPECT_NEAR(bytes.SelfShare("big_pairs"), 0.60, 0.03);
  EXPECT_NEAR(bytes.SelfShare("medium_live_set"), 0.30, 0.03);
  EXPECT_NEAR(bytes.SelfShare("small_temporaries"), 0.10, 0.03);
  // Estimates are unbiased: the sampled total is near the exact one.
  EXPECT_NEAR(static_cast<double>(bytes.total()), 8 * 209'725'200.0, 0.05 * 8 * 209'725'200.0);
  // The sites are named under their callers, as CPU stacks are.
  EXPECT_GT(bytes.WithSequence({"main", "run_sites", "big_pairs"}), 0u);
  // At the peak, the medium live set is what is live.
  FoldedProfile peak = rec.View("peak");
  EXPECT_GT(peak.SelfShare("medium_live_set"), 0.9);
}

TEST(AllocTest, EveryAllocationSampledGivesExactSiteCounts) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "sites"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  ExpectSitesTotals(rec, 1);
  EXPECT_EQ(rec.allocations["sampling"]["sampled_allocations"].get<uint64_t>(), 1'326'210u);
  // The stack hint: once the thread's unwinds reach _start, the preload copies the frames below
  // it (a few hundred bytes) instead of 8 KiB, and no unwind is cut short by that: every
  // allocation's stack reaches _start. (Not the run's truncated-stack-copy count: a CPU sample
  // that lands in the loader's start-up, deeper than the kernel's 8 KiB copy, counts there.)
  EXPECT_LT(rec.allocations["sampling"]["mean_stack_copy_bytes"].get<uint64_t>(), 2048u);
  EXPECT_GE(rec.unwind["ends"]["complete"].get<uint64_t>(), 1'326'210u);  // + CPU samples
  FoldedProfile count = rec.View("allocs");
  EXPECT_EQ(count.WithSequence({"_start", "__libc_start_main"}), 1'326'210u);
  EXPECT_EQ(count.Self("small_temporaries"), 1'310'720u);
  EXPECT_EQ(count.Self("medium_live_set"), 15'360u);
  EXPECT_EQ(count.Self("big_pairs"), 120u);
  EXPECT_EQ(count.Self("leak_blocks"), 10u);
  FoldedProfile bytes = rec.View("alloc");
  EXPECT_EQ(bytes.Self("big_pairs"), 125'829'120u);
  EXPECT_EQ(bytes.Self("medium_live_set"), 62'914'560u);
  EXPECT_EQ(bytes.Self("small_temporaries"), 20'971'520u);
  FoldedProfile temporary = rec.View("temporary");
  EXPECT_EQ(temporary.Self("small_temporaries"), 1'310'720u);
  EXPECT_EQ(temporary.total(), 1'310'720u);
  FoldedProfile leaked = rec.View("leaked");
  EXPECT_EQ(leaked.total(), 10'000u);
  EXPECT_EQ(leaked.Self("leak_blocks"), 10'000u);
  FoldedProfile peak = rec.View("peak");
  EXPECT_EQ(peak.Self("medium_live_set"), 62'914'560u);
  EXPECT_EQ(peak.Self("leak_blocks"), 10'000u);

  // `report` of a view: heaptrack_print's summary and the call-site rankings of every view, in
  // text and, for scripts, in the JSON document (which had the function tables only).
  const std::string alloc_view = rec.folded.substr(0, rec.folded.size() - 7) + ".alloc.folded";
  CommandResult text = RunCommand({NativeprofBinary(), "report", "-n", "3", alloc_view});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("call sites by bytes allocated"));
  EXPECT_THAT(text.out, HasSubstr("Top call site by temporary allocations"));
  CommandResult json =
      RunCommand({NativeprofBinary(), "report", "--format", "json", "-n", "3", alloc_view});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_TRUE(doc.is_object() && doc.contains("allocations")) << json.out;
  EXPECT_EQ(doc["allocations"]["exact"]["allocation_calls"].get<uint64_t>(), 1'326'210u);
  const nlohmann::json& rankings = doc["allocations"]["call_sites"];
  ASSERT_EQ(rankings.size(), 5u) << json.out;  // alloc, allocs, temporary, peak, leaked
  EXPECT_EQ(rankings[0]["metric"], "bytes allocated");
  EXPECT_EQ(rankings[0]["total"].get<uint64_t>(), 209'725'200u);
  ASSERT_GE(rankings[0]["sites"].size(), 1u);
  EXPECT_EQ(rankings[0]["sites"][0]["name"], "big_pairs");
  EXPECT_EQ(rankings[0]["sites"][0]["value"].get<uint64_t>(), 125'829'120u);
  EXPECT_EQ(rankings[2]["metric"], "temporary allocations");
  EXPECT_EQ(rankings[2]["sites"][0]["name"], "small_temporaries");
  CommandResult md =
      RunCommand({NativeprofBinary(), "report", "--format", "markdown", "-n", "3", alloc_view});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_THAT(md.out, HasSubstr("**Allocations (exact counts of every call)**"));
  EXPECT_THAT(md.out, HasSubstr("**Top 3 call sites by bytes allocated**"));
  EXPECT_THAT(md.out, HasSubstr("| 60.00% | 125,829,120 B | `big_pairs` |"));
}

// --no-cpu: the same exact totals and sites, with no CPU sample and no CPU profile written.
TEST(AllocTest, AllocationsWithoutCpuSamples) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec =
      RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "sites"}, {"--no-cpu"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  ExpectSitesTotals(rec, 1);
  ExpectSeriesHoldsThePeak(rec);
  FoldedProfile count = rec.View("allocs");
  EXPECT_EQ(count.Self("small_temporaries"), 1'310'720u);
  EXPECT_EQ(count.Self("big_pairs"), 120u);
  EXPECT_GT(count.WithSequence({"main", "run_sites", "big_pairs"}), 0u);
  EXPECT_FALSE(std::filesystem::exists(rec.folded)) << "a CPU profile was written";
  nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(rec.folded + ".json"));
  EXPECT_EQ(meta["samples"].get<uint64_t>(), 0u);
  EXPECT_EQ(meta["event"], "none");
  // Frames are tied to their modules from the allocation sites, for `report --by module`.
  EXPECT_TRUE(meta["frame_modules"]["frames"].contains("big_pairs"));
  EXPECT_THAT(rec.result.err, HasSubstr("no CPU samples (--no-cpu)"));
}

// The metadata goes beside the first -o, which need not be the folded one: the views are read
// back in their units all the same (they were read as samples), `convert` writes a view alone as
// its pprof sample type (it wrote `samples/count` holding bytes), and a file written beside an -o
// that cannot be is refused before the command runs.
TEST(AllocTest, ViewsReadBackWhicheverOutputCameFirst) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  // An earlier run's metadata beside p.folded, which the run below replaces: not taken.
  ASSERT_TRUE(nativeprof::WriteFileAtomically(
                  dir + "/p.folded.json",
                  R"({"outputs": [{"path": "p.folded"}, {"path": "p.allocs.folded"}]})")
                  .ok());
  std::filesystem::last_write_time(dir + "/p.folded.json",
                                   std::filesystem::file_time_type::clock::now() -
                                       std::chrono::hours(1));
  CommandResult run = RunCommand({NativeprofBinary(), "record", "--no-counters", "--alloc=1",
                                  "--no-cpu", "-o", dir + "/p.svg", "-o", dir + "/p.folded", "--",
                                  TargetPath("alloc_workload"), "sites"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(std::filesystem::exists(dir + "/p.svg.json"));
  // Another file's JSON beside them, which is not one of the run's, is passed over in silence.
  ASSERT_TRUE(nativeprof::WriteFileAtomically(dir + "/p.json", "{not json").ok());
  CommandResult report = RunCommand({NativeprofBinary(), "report", dir + "/p.allocs.folded"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("(of 1,326,210 allocations)"));
  EXPECT_THAT(report.out, HasSubstr("calls to allocation functions  1,326,210"));
  EXPECT_TRUE(report.err.empty()) << report.err;

  CommandResult convert = RunCommand(
      {NativeprofBinary(), "convert", dir + "/p.allocs.folded", dir + "/allocs.pb.gz"});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  CommandResult strings = RunCommand({"sh", "-c", "gzip -dc " + dir + "/allocs.pb.gz | strings"});
  EXPECT_THAT(strings.out, HasSubstr("alloc_objects"));
  EXPECT_THAT(strings.out, ::testing::Not(HasSubstr("samples")));

  // Metadata older than the view is of an earlier run, whose view was replaced since: not taken.
  std::filesystem::last_write_time(
      dir + "/p.svg.json", std::filesystem::last_write_time(dir + "/p.allocs.folded") -
                               std::chrono::hours(1));
  CommandResult stale = RunCommand({NativeprofBinary(), "report", dir + "/p.allocs.folded"});
  EXPECT_THAT(stale.err, HasSubstr("its counts are read as samples")) << stale.out;
  // Without its metadata a view is read as samples, and says so.
  std::filesystem::remove(dir + "/p.svg.json");
  CommandResult bare = RunCommand({NativeprofBinary(), "report", dir + "/p.allocs.folded"});
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_THAT(bare.err, HasSubstr("its counts are read as samples"));

  const std::string blocked = MakeTempDir();
  ASSERT_TRUE(std::filesystem::create_directory(blocked + "/q.leaked.folded"));
  CommandResult refused = RunCommand(
      {NativeprofBinary(), "record", "--no-counters", "--alloc", "-o", blocked + "/q.folded",
       "--", "/bin/sh", "-c", "touch " + blocked + "/ran"});
  EXPECT_EQ(refused.exit_code, 4) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("q.leaked.folded is a directory"));
  EXPECT_FALSE(std::filesystem::exists(blocked + "/ran")) << "the command ran";
}

// The heap profile as `go tool pprof` shows it: flat cost on the program's calls (the sites
// `report` ranks), none on operator new or malloc, and what each site called through as the
// "via" tag. The folded views keep the full stacks.
TEST(AllocTest, GoToolPprofPutsFlatCostOnTheSites) {
  NP_SKIP_IF_NO_PERF();
  if (RunCommand({"sh", "-c", "command -v go"}).exit_code != 0) {
    GTEST_SKIP() << "go is not installed (tools/setup.sh installs golang-go)";
  }
  const std::string dir = MakeTempDir();
  CommandResult run =
      RunCommand({NativeprofBinary(), "record", "--no-counters", "--no-cpu", "--alloc=1", "-o",
                  dir + "/p.pb.gz", "-o", dir + "/p.folded", "--", TargetPath("alloc_cxx")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The pprof of the folded bytes view, made by convert, reads the same (the folded file keeps
  // names only: the metadata's frame modules tell the C++ runtime's frames).
  CommandResult converted = RunCommand(
      {NativeprofBinary(), "convert", dir + "/p.alloc.folded", dir + "/converted.pb.gz"});
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  for (const char* file : {"/p.heap.pb.gz", "/converted.pb.gz"}) {
    CommandResult top = RunCommand({"timeout", "100", "go", "tool", "pprof", "-top",
                                    "-sample_index=alloc_space", dir + file});
    ASSERT_EQ(top.exit_code, 0) << top.err;
    // alloc_cxx's vector growth is 818,800 B of its 1.3 MB (see its source): 63 % flat.
    EXPECT_THAT(top.out,
                ::testing::ContainsRegex("799\\.61kB +6[0-9]\\.[0-9]+% .* vector_growth"))
        << file << "\n" << top.out;
    for (const char* plumbing : {"operator new", "malloc", "push_back", "_M_realloc_insert"}) {
      EXPECT_THAT(top.out, ::testing::Not(::testing::ContainsRegex(
                               absl::StrCat("\\n +[0-9.]+[kM]?B .*", plumbing))))
          << plumbing << " has flat cost in " << file << ":\n" << top.out;
    }
  }
  CommandResult tags = RunCommand({"timeout", "100", "go", "tool", "pprof", "-tags",
                                   "-sample_index=alloc_space", dir + "/p.heap.pb.gz"});
  ASSERT_EQ(tags.exit_code, 0) << tags.err;
  EXPECT_THAT(tags.out, HasSubstr("via: Total"));
  EXPECT_THAT(tags.out, HasSubstr("std::vector<int, std::allocator<int> >::push_back"));
  EXPECT_GT(FoldedProfile::Parse(ReadFileOrEmpty(dir + "/p.alloc.folded")).Total("operator new"),
            0u);
}

// `diff` of two allocation views: the exact totals, then the sites in the view's own unit, with
// both values; the site whose temporary allocations went away heads its table.
TEST(AllocTest, DiffComparesSitesInTheViewsUnit) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording before = RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "sites"});
  ASSERT_EQ(before.result.exit_code, 0) << before.result.err;
  AllocRecording after = RecordAlloc("--alloc=1", {TargetPath("alloc_cxx")});
  ASSERT_EQ(after.result.exit_code, 0) << after.result.err;
  auto view = [](const AllocRecording& r, const char* v) {
    return absl::StrCat(r.folded.substr(0, r.folded.size() - 7), ".", v, ".folded");
  };
  CommandResult diff = RunCommand({NativeprofBinary(), "diff", view(before, "temporary"),
                                   view(after, "temporary"), "-n", "3"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_THAT(diff.out, HasSubstr("temporary allocations                1,310,720 -> 1,000"));
  EXPECT_THAT(diff.out,
              HasSubstr("Call sites by temporary allocations: before -> after (allocations)"));
  EXPECT_THAT(diff.out, ::testing::ContainsRegex(
                            "all sites\n +1,310,720 -> 0 +-100\\.0 % +small_temporaries"))
      << diff.out;
  CommandResult peak = RunCommand(
      {NativeprofBinary(), "diff", view(before, "peak"), view(after, "peak"), "-n", "1"});
  ASSERT_EQ(peak.exit_code, 0) << peak.err;
  EXPECT_THAT(peak.out, HasSubstr("Call sites by bytes live at the peak: before -> after (bytes)"));
  EXPECT_THAT(peak.out, HasSubstr("62,914,560 -> 0"));
  EXPECT_THAT(peak.out, HasSubstr("medium_live_set"));
}

TEST(AllocTest, ReallocAlignedAndOverflowBehaveAsGlibc) {
  NP_SKIP_IF_NO_PERF();
  // --alloc=1: every block is sampled, so the moves of sampled blocks are exercised too.
  for (const char* rate : {"--alloc", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "realloc"});
    // The workload checks every result itself (alignment, zeroing, ENOMEM, contents kept).
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    // The construction's 4,231,726 B, with pvalloc(100) counted as the page it allocates (what
    // the caller may use): + 3,996. An alignment of 4 GiB was not counted at all.
    EXPECT_EQ(Exact(rec, "allocated_bytes"), 4'235'722u);
    EXPECT_EQ(Exact(rec, "allocation_calls"), 53u);  // those that returned memory
    EXPECT_EQ(Exact(rec, "leaked_bytes"), 0u);
    EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 1'048'576u);
  }
}

// The peak set holds the allocation that made the peak. Its block is sampled for certain (64 MiB
// against a mean of 512 KiB), and the mark of the peak it raises must reach the ring after its
// sample: the set was copied without it before, so a peak made by one big block showed empty.
TEST(AllocTest, ThePeakSetHoldsTheAllocationThatMadeThePeak) {
  NP_SKIP_IF_NO_PERF();
  for (const char* rate : {"--alloc", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "bigpeak"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 96u << 20);
    FoldedProfile peak = rec.View("peak");
    EXPECT_EQ(peak.Self("peak_top_block"), 64u << 20);
    EXPECT_EQ(peak.Self("peak_base_block"), 32u << 20);
  }
}

// A realloc that fails leaves its block allocated: still live, and leaked if the program never
// frees it. (The failed move of a sampled block, or of an over-aligned one at either rate,
// counted it as freed, so the leak went unseen.) The third block's realloc fails only for want
// of address space. Under --alloc=1 every block is sampled, so glibc's realloc is asked with the
// ring lock held (ResizeSampledBlock): a refusal writes nothing, and every view shows the blocks
// once, at the site that allocated them, not at the realloc's (refused_realloc). (Writing the
// free first and the block again after a refusal counted it twice, and at the wrong site.)
TEST(AllocTest, AFailedReallocLeavesTheBlockCounted) {
  NP_SKIP_IF_NO_PERF();
  for (const char* rate : {"--alloc", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "realloc-fails"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    EXPECT_EQ(Exact(rec, "allocation_calls"), 3u);
    EXPECT_EQ(Exact(rec, "free_calls"), 0u);
    EXPECT_EQ(Exact(rec, "temporary_allocations"), 0u);
    EXPECT_EQ(Exact(rec, "leaked_bytes"), 900u);
    EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 900u);
  }
  AllocRecording every = RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "realloc-fails"});
  EXPECT_EQ(every.View("leaked").Self("realloc_fails"), 900u);
  EXPECT_EQ(every.View("peak").Self("realloc_fails"), 900u);
  EXPECT_EQ(every.View("allocs").Self("realloc_fails"), 3u);
  for (const char* view : {"alloc", "allocs", "leaked", "peak"}) {
    EXPECT_EQ(every.View(view).Total("refused_realloc"), 0u) << view;
  }
  EXPECT_EQ(every.View("temporary").total(), 0u);
}

TEST(AllocTest, ThreadsAndCrossThreadFreesAreCounted) {
  NP_SKIP_IF_NO_PERF();
  for (const char* rate : {"--alloc", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "threads", "4"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    // Plus one DTV calloc per thread that glibc keeps with the cached stack.
    EXPECT_EQ(Exact(rec, "allocation_calls"), 804'004u);
    EXPECT_EQ(Exact(rec, "free_calls"), 804'000u);
    EXPECT_EQ(Exact(rec, "temporary_allocations"), 800'000u);
    EXPECT_EQ(Exact(rec, "leaked_blocks"), 4u);
    // Four threads each hold 256,000 B at their peak (and their DTVs); the peak is exact within
    // the preload's 4 KiB per-thread flush granularity.
    EXPECT_GE(Exact(rec, "peak_heap_bytes"), 256'000u);
    EXPECT_LE(Exact(rec, "peak_heap_bytes"), 1'024'000u + 4u * 1024u + 5u * 4096u);
    // Each thread's stack hint ends at its own outermost frame (clone3), not the main thread's:
    // every sampled allocation's stack reaches it. (Not the run's truncated-stack-copy count: a
    // CPU sample that lands as a thread starts, while sp is still at the top of its new stack,
    // has a kernel copy cut at the mapping's end, which a few runs in a hundred catch.)
    const FoldedProfile allocs = rec.View("allocs");
    ASSERT_GT(allocs.total(), 0u);
    for (const FoldedLine& line : allocs.lines()) {
      ASSERT_GE(line.frames.size(), 2u);
      EXPECT_TRUE(line.frames[1] == "clone3" || line.frames[1] == "_start")
          << absl::StrJoin(line.frames, ";");
    }
  }
}

// Threads past the 8,192 slots of the channel count in their own memory and add it to a shared
// slot when they exit: nothing of theirs is lost.
TEST(AllocTest, ThreadsPastTheSlotsAreCounted) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec =
      RecordAlloc("--alloc", {TargetPath("alloc_workload"), "serial-threads", "8500"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  EXPECT_EQ(Exact(rec, "temporary_allocations"), 85'000u);
  // Plus what glibc allocates for threads (their DTVs), kept with its cached stacks.
  EXPECT_GE(Exact(rec, "allocation_calls"), 85'000u);
  EXPECT_LE(Exact(rec, "allocation_calls"), 85'000u + 2u * 8'500u);
  EXPECT_GE(Exact(rec, "free_calls"), 85'000u);
  EXPECT_EQ(Exact(rec, "allocation_calls") - Exact(rec, "free_calls"), Exact(rec, "leaked_blocks"));
}

// An exec'd image's heap is gone: it stays leaked (that image never freed it) but leaves the live
// heap, so the peak is one image's, not the sum of every image's leftovers.
TEST(AllocTest, AnExecdImagesHeapLeavesTheLiveHeap) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "execs", "3"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  ExpectSitesTotals(rec, 4);
  EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 62'924'560u);
  ASSERT_EQ(rec.allocations["per_process"].size(), 1u);
  EXPECT_EQ(rec.allocations["per_process"][0]["live_bytes_at_end"].get<int64_t>(), 10'000);
  // The sampled views agree: the peak set is one image's, the leak all four.
  EXPECT_EQ(rec.View("peak").Self("leak_blocks"), 10'000u);
  EXPECT_EQ(rec.View("peak").Self("medium_live_set"), 62'914'560u);
  EXPECT_EQ(rec.View("leaked").Self("leak_blocks"), 40'000u);
  EXPECT_EQ(rec.allocations["sampling"]["unmatched_frees"].get<uint64_t>(), 0u);
}

// Under --alloc=1 a thread's frees wait in a batch until its next record. One that frees and then
// never runs again while the process calls exit() left them unwritten, and its 20 blocks showed
// as leaked (6,000 B at frees_then_blocks); the process's end writes every thread's batch.
// Its process may also end by a signal, which runs nothing of the preload's: its parent's wait
// call writes the batch (the shell's), or where no wait call the library sees reaped it, the
// profiler takes it at the process's exit record; or as the recording stops, if the process was
// killed in its last moments, or still runs.
TEST(AllocTest, FreesOfAThreadThatNeverRunsAgainAreWritten) {
  NP_SKIP_IF_NO_PERF();
  const std::string pid_file = MakeTempDir() + "/stays.pid";
  const std::string workload = TargetPath("alloc_workload");
  const struct {
    const char* name;
    std::vector<std::string> command;
    int exit_code;
  } kEnds[] = {
      {"exit", {workload, "exit-while-blocked"}, 0},
      {"killed", {workload, "exit-while-blocked", "kill"}, 128 + SIGKILL},
      // Killed over AllocTracker::kLateFreeNs before the recording stops: written by the shell
      // as it reaps it, or taken by the profiler at its exit record.
      {"killed long before the end",
       {"/bin/sh", "-c", absl::StrCat(workload, " exit-while-blocked kill; sleep 1.2")},
       0},
      {"killed long before the end, reaped unseen",
       {workload, "exit-while-blocked", "kill-unseen"},
       0},
      // The command (the shell) ends once the workload's thread freed its blocks; the workload
      // still runs as the recording stops.
      {"still running",
       {"/bin/sh", "-c",
        absl::StrCat(workload, " exit-while-blocked stay ", pid_file,
                     " >/dev/null 2>&1 & while [ ! -e ", pid_file, " ]; do sleep 0.01; done")},
       0},
  };
  for (const auto& end : kEnds) {
    SCOPED_TRACE(end.name);
    AllocRecording rec = RecordAlloc("--alloc=1", end.command);
    if (std::string pid = ReadFileOrEmpty(pid_file); !pid.empty()) {
      ::kill(std::stoi(pid), SIGKILL);
    }
    ASSERT_EQ(rec.result.exit_code, end.exit_code) << rec.result.err;
    EXPECT_EQ(rec.View("alloc").Self("frees_then_blocks"), 6'000u);
    EXPECT_EQ(rec.View("leaked").Self("frees_then_blocks"), 0u);
    EXPECT_EQ(rec.allocations["sampling"]["unmatched_frees"].get<uint64_t>(), 0u);
    EXPECT_EQ(rec.allocations["sampling"]["lost_samples"].get<uint64_t>(), 0u);
  }
}

// The same when each image holds more than what the ones before it left: a single process's peak
// is at least what it holds at its end, but not what images it exec'd from left (that floor
// counted them: four images of 10 MB each peaked at 40 MB).
TEST(AllocTest, AnExecdImagesLeftoversAreNotInTheLastImagesFloor) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "execs-holding", "3"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  EXPECT_EQ(Exact(rec, "allocation_calls"), 40u);
  EXPECT_EQ(Exact(rec, "leaked_bytes"), 40'000'000u);
  EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 10'000'000u);
}

// A forked child frees the copies of its parent's blocks: not matched to the parent's (which
// stay live there) and not counted as unmatched; the parent's and child's own blocks, at the
// same addresses, are kept apart. The exact totals count each block where it was allocated: the
// child's 100 frees of its copies are apart from the run's frees, and the leak is exact. (They
// used to be among the frees: 100 more frees than allocations left the leak unknown, and where
// a child freed fewer than its parent leaked, the leak came out too low.) The same holds for a
// child of the raw fork system call, which runs no atfork handler: it counted into its parent's
// slot, as its parent's image, and the leak was unknown.
TEST(AllocTest, AForkedChildsFreesOfInheritedBlocksAreKeptApart) {
  NP_SKIP_IF_NO_PERF();
  for (const char* rate : {"--alloc=1", "--alloc"}) {
    for (const char* mode : {"forkfree", "rawforkfree"}) {
      SCOPED_TRACE(absl::StrCat(rate, " ", mode));
      AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), mode});
      ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
      EXPECT_EQ(Exact(rec, "allocation_calls"), 2 * 1'326'210u + 100);
      EXPECT_EQ(Exact(rec, "free_calls"), 2 * 1'326'200u + 100);
      EXPECT_EQ(Exact(rec, "inherited_free_calls"), 100u);
      EXPECT_EQ(Exact(rec, "inherited_freed_bytes"), 100'000u);
      EXPECT_TRUE(rec.allocations["exact"]["leak_known"].get<bool>());
      EXPECT_EQ(Exact(rec, "leaked_bytes"), 20'000u);
      EXPECT_EQ(Exact(rec, "leaked_blocks"), 20u);
      EXPECT_THAT(rec.result.err,
                  HasSubstr("(and 100 frees of blocks inherited across fork, 100.0 kB)"));
      EXPECT_THAT(rec.result.err, HasSubstr("leaked 20.0 kB in 20 blocks"));
      // Neither process's live heap went below zero: the child never held what it freed.
      for (const nlohmann::json& p : rec.allocations["per_process"]) {
        EXPECT_EQ(p["live_bytes_at_end"].get<int64_t>(), 10'000) << p.dump();
      }
      if (std::string(rate) != "--alloc=1") continue;
      EXPECT_EQ(rec.allocations["sampling"]["unmatched_frees"].get<uint64_t>(), 0u);
      EXPECT_EQ(rec.allocations["sampling"]["inherited_frees"].get<uint64_t>(), 100u);
      // Each process's leak and peak set, by site: two of each.
      EXPECT_EQ(rec.View("leaked").Self("leak_blocks"), 20'000u);
      EXPECT_EQ(rec.View("allocs").Self("medium_live_set"), 2 * 15'360u);
    }
  }
}

// A child that ends (by exit or _exit) with blocks it never freed leaves them leaked, and takes
// them out of the live heap: the parent's later peak does not add them. Before: a 22 MiB peak
// where no moment had more than 8 MiB live.
TEST(AllocTest, AnEndedProcessesHeapLeavesTheLiveHeap) {
  NP_SKIP_IF_NO_PERF();
  constexpr uint64_t kMiB = 1024 * 1024;
  for (const char* rate : {"--alloc", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "forkleak"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    EXPECT_EQ(Exact(rec, "allocation_calls"), 22u);
    EXPECT_EQ(Exact(rec, "leaked_bytes"), 16 * kMiB);
    EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 8 * kMiB);
    if (std::string(rate) != "--alloc=1") continue;
    EXPECT_EQ(rec.allocations["sampling"]["unmatched_frees"].get<uint64_t>(), 0u);
    EXPECT_EQ(rec.View("leaked").Self("child_keeps"), 16 * kMiB);
    EXPECT_EQ(rec.View("leaked").Self("parent_after"), 0u);
    // At the peak: one child's 8 MiB, not the parent's blocks on top of both children's.
    EXPECT_EQ(rec.View("peak").Self("child_keeps"), 8 * kMiB);
    EXPECT_EQ(rec.View("peak").Self("parent_after"), 0u);
  }
}

// A child killed by a signal runs no exit path; its parent's wait call takes its heap out of the
// live heap. Before: a 14 MiB peak (the parent's 6 MiB on top of the dead child's 8 MiB).
TEST(AllocTest, AKilledChildsHeapLeavesTheLiveHeapWhenReaped) {
  NP_SKIP_IF_NO_PERF();
  constexpr uint64_t kMiB = 1024 * 1024;
  for (const char* rate : {"--alloc", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "forkkill"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    EXPECT_EQ(Exact(rec, "allocation_calls"), 14u);
    EXPECT_EQ(Exact(rec, "leaked_bytes"), 8 * kMiB);
    EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 8 * kMiB);
    if (std::string(rate) != "--alloc=1") continue;
    EXPECT_EQ(rec.View("leaked").Self("child_keeps"), 8 * kMiB);
    EXPECT_EQ(rec.View("peak").Self("child_keeps"), 8 * kMiB);
    EXPECT_EQ(rec.View("peak").Self("parent_after"), 0u);
  }
}

// A killed process reaped where no wait call returns it (SIGCHLD ignored): the profiler sees it
// gone at its exit record and takes its heap out of the live heap. Before: the live heap ended at
// the dead process's 8 MiB, after every process had ended.
TEST(AllocTest, AKilledProcessReapedUnseenLeavesTheLiveHeap) {
  NP_SKIP_IF_NO_PERF();
  constexpr uint64_t kMiB = 1024 * 1024;
  AllocRecording rec = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "reapunseen"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  EXPECT_GE(Exact(rec, "leaked_bytes"), 8 * kMiB);
  EXPECT_LT(Exact(rec, "leaked_bytes"), 9 * kMiB);
  const nlohmann::json& points = rec.allocations["live_heap_over_time"]["points"];
  ASSERT_FALSE(points.empty());
  EXPECT_EQ(points.back()[1].get<uint64_t>(), 0u) << points.dump();
}

// A process killed by a signal leaves its thread's last rise of the heap (up to 4 KiB)
// unpublished; the peak of a single process is still at least what it holds at the end. Before:
// dash killed with 1,452 B live reported a peak of 0 B.
TEST(AllocTest, AKilledSingleProcessPeaksAtLeastAtWhatItHolds) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc", {"/bin/sh", "-c", "kill -9 $$"});
  ASSERT_EQ(rec.result.exit_code, 128 + SIGKILL) << rec.result.err;
  ASSERT_EQ(rec.allocations["processes"].get<uint64_t>(), 1u);
  ASSERT_GT(Exact(rec, "leaked_bytes"), 0u);
  EXPECT_GE(Exact(rec, "peak_heap_bytes"), Exact(rec, "leaked_bytes"));
}

// Pids wrap: a process given the pid of one that ended must not take that one's heap out of the
// live heap a second time. Before: a peak of 8 MiB where the parent alone held 10 MiB.
TEST(AllocTest, AProcessWithAnEndedProcessesPidStartsAfresh) {
  NP_SKIP_IF_NO_PERF();
  constexpr uint64_t kMiB = 1024 * 1024;
  AllocRecording rec = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "pidreuse"});
  if (rec.result.exit_code == 3) {
    GTEST_SKIP() << "could not give a child a chosen pid (needs root for ns_last_pid)";
  }
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  EXPECT_EQ(Exact(rec, "leaked_bytes"), 12 * kMiB);
  EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 10 * kMiB);
}

// A profiler killed outright (SIGKILL) stops reading without a word. The command must neither die
// of SIGPIPE on the wake FIFO nor wait for room in a ring nobody reads: it finishes as it would
// have, and the next profile removes the files the killed one left.
TEST(AllocTest, TheCommandOutlivesAProfilerKilledOutright) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  const std::string status = dir + "/status";
  BackgroundProcess profiler(
      {NativeprofBinary(), "record", "--no-counters", "--alloc=1", "-o", dir + "/k.folded", "--",
       "/bin/sh", "-c", TargetPath("alloc_workload") + " sites 20 >/dev/null; echo $? >" + status});
  ASSERT_GT(profiler.pid(), 0);
  ::usleep(800'000);  // the command is running (20 rounds take ~3 s bare here)
  ASSERT_EQ(::kill(profiler.pid(), SIGKILL), 0);
  profiler.Wait();
  const std::string left = "/dev/shm/nativeprof-alloc-" + std::to_string(profiler.pid()) + "-0";
  const bool left_files = ::access(left.c_str(), F_OK) == 0;
  // Before the fix: status 141 (SIGPIPE), or 2 s of waiting per record, for hours.
  for (int i = 0; i < 1200 && ReadFileOrEmpty(status).empty(); ++i) ::usleep(100'000);
  EXPECT_EQ(ReadFileOrEmpty(status), "0\n");
  if (left_files) {
    AllocRecording rec = RecordAlloc("--alloc", {"true"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    EXPECT_NE(::access(left.c_str(), F_OK), 0) << left << " was not removed";
    EXPECT_NE(::access((left + ".wake").c_str(), F_OK), 0);
  }
}

TEST(AllocTest, ForkedAndExecedChildrenAreCounted) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "forkexec"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  ExpectSitesTotals(rec, 2);
  EXPECT_EQ(rec.allocations["processes"].get<uint64_t>(), 2u);
  // The two run at once, so their summed peak lies anywhere between one and two peaks; each
  // process's own is exact, as heaptrack would report it for each.
  const nlohmann::json& per_process = rec.allocations["per_process"];
  ASSERT_EQ(per_process.size(), 2u) << per_process.dump();
  for (const nlohmann::json& p : per_process) {
    EXPECT_EQ(p["peak_heap_bytes"].get<uint64_t>(), 62'924'560u) << p.dump();
    EXPECT_EQ(p["live_bytes_at_end"].get<int64_t>(), 10'000) << p.dump();
  }
  EXPECT_NE(per_process[0]["pid"], per_process[1]["pid"]);
  EXPECT_GE(Exact(rec, "peak_heap_bytes"), 62'924'560u);
  EXPECT_LE(Exact(rec, "peak_heap_bytes"), 2 * 62'924'560u);
  EXPECT_THAT(rec.result.err, HasSubstr("(2 processes together; the largest, "));
  EXPECT_THAT(rec.result.err, HasSubstr("peaked at 62.9 MB)"));
}

// _exit runs no destructor, and the 3,000 B rise is below the 4 KiB step at which a thread
// publishes its live heap: the preload's _exit publishes it first.
TEST(AllocTest, APeakJustBeforeUnderscoreExitIsKept) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "_exit"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  EXPECT_EQ(Exact(rec, "allocation_calls"), 3u);
  EXPECT_EQ(Exact(rec, "leaked_bytes"), 3'000u);
  EXPECT_EQ(Exact(rec, "peak_heap_bytes"), 3'000u);
  EXPECT_THAT(rec.result.err, HasSubstr("peak heap 3,000 B"));
}

TEST(AllocTest, ExitStatusAndOutputPassThrough) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "exit", "7"});
  EXPECT_EQ(rec.result.exit_code, 7) << rec.result.err;
  ExpectSitesTotals(rec, 1);
  // The shell and its commands run under the preload unchanged.
  AllocRecording shell =
      RecordAlloc("--alloc", {"/bin/sh", "-c", "echo hello | tr a-z A-Z; exit 3"});
  EXPECT_EQ(shell.result.exit_code, 3) << shell.result.err;
  EXPECT_EQ(shell.result.out, "HELLO\n");
  EXPECT_GE(shell.allocations["processes"].get<uint64_t>(), 2u);
}

// The preload brings no library of its own into the processes it runs in: each one it needs
// costs every process of the command its loading (libm, for log() alone, was ~1.4 ms each).
TEST(AllocTest, ThePreloadLoadsNoLibraryButLibc) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc", {"/bin/cat", "/proc/self/maps"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  ASSERT_THAT(rec.result.out, HasSubstr("libnativeprof_alloc.so"));
  std::set<std::string> libraries;
  for (absl::string_view line : absl::StrSplit(rec.result.out, '\n')) {
    const size_t slash = line.rfind('/');
    if (slash != absl::string_view::npos && absl::StrContains(line.substr(slash), ".so")) {
      libraries.insert(std::string(line.substr(slash + 1)));
    }
  }
  for (const std::string& lib : libraries) {
    EXPECT_TRUE(absl::StartsWith(lib, "libnativeprof_alloc.so") || absl::StartsWith(lib, "libc.") ||
                absl::StartsWith(lib, "libc-") || absl::StartsWith(lib, "ld-linux"))
        << lib << " is loaded into /bin/cat, which links libc alone";
  }
}

TEST(AllocTest, CppAndRustSitesAreNamed) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording cxx = RecordAlloc("--alloc=1", {TargetPath("alloc_cxx")});
  ASSERT_EQ(cxx.result.exit_code, 0) << cxx.result.err;
  FoldedProfile cxx_count = cxx.View("allocs");
  EXPECT_GT(cxx_count.Total("operator new"), 0u) << ReadFileOrEmpty(cxx.folded);
  for (const char* target : {"alloc_rust", "alloc_rust_v0"}) {
    SCOPED_TRACE(target);
    AllocRecording rust = RecordAlloc("--alloc=1", {TargetPath(target)});
    ASSERT_EQ(rust.result.exit_code, 0) << rust.result.err;
    FoldedProfile bytes = rust.View("alloc");
    EXPECT_GT(bytes.Total("alloc_rust::work::vec_growth"), 0u);
    EXPECT_GT(bytes.Total("alloc_rust::work::hashmap_insertion"), 0u);
  }
}

// heaptrack's summary of a run (heaptrack_print's last lines), in calls and decimal bytes.
struct HeaptrackSummary {
  double calls = -1, temporary = -1, peak = -1, leaked = -1;
};

double HeaptrackBytes(const std::string& text) {
  // "63.00M", "125.51K", "544B": heaptrack prints decimal units.
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  switch (end != nullptr ? *end : 'B') {
    case 'K': return v * 1e3;
    case 'M': return v * 1e6;
    case 'G': return v * 1e9;
    default: return v;
  }
}

std::optional<HeaptrackSummary> RunHeaptrack(const std::string& program, std::string* why) {
  if (RunCommand({"heaptrack", "--version"}).exit_code != 0) {
    *why = "heaptrack is not installed (tools/setup.sh installs it)";
    return std::nullopt;
  }
  const std::string dir = MakeTempDir();
  CommandResult run = RunCommand({"heaptrack", "-o", dir + "/ht", program});
  if (run.exit_code != 0) {
    *why = "heaptrack failed: " + run.err;
    return std::nullopt;
  }
  CommandResult print = RunCommand({"heaptrack_print", dir + "/ht.zst"});
  HeaptrackSummary s;
  std::istringstream in(print.out);
  std::string line;
  auto value = [](const std::string& l) { return l.substr(l.find(':') + 2); };
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "calls to allocation functions:")) s.calls = std::stod(value(line));
    if (absl::StartsWith(line, "temporary memory allocations:")) s.temporary = std::stod(value(line));
    if (absl::StartsWith(line, "peak heap memory consumption:")) s.peak = HeaptrackBytes(value(line));
    if (absl::StartsWith(line, "total memory leaked:")) s.leaked = HeaptrackBytes(value(line));
  }
  if (s.calls < 0 || s.peak < 0) {
    *why = "no summary in heaptrack_print's output: " + print.out.substr(0, 500);
    return std::nullopt;
  }
  return s;
}

// The four totals against heaptrack's on the C++ and Rust targets, within 1 %. heaptrack's own
// preload loads libstdc++, whose start-up allocates a 72,704 B emergency pool (one call, live
// until exit): part of a C++ program anyway, an addition heaptrack makes to a Rust one.
TEST(AllocTest, TotalsAgreeWithHeaptrack) {
  NP_SKIP_IF_NO_PERF();
  struct Case {
    const char* target;
    double heaptrack_extra_calls, heaptrack_extra_peak;
  };
  for (const Case& c : {Case{"alloc_cxx", 0, 0}, Case{"alloc_rust", 1, 72'704},
                        Case{"alloc_rust_v0", 1, 72'704}}) {
    SCOPED_TRACE(c.target);
    std::string why;
    std::optional<HeaptrackSummary> ht = RunHeaptrack(TargetPath(c.target), &why);
    if (!ht.has_value()) GTEST_SKIP() << why;
    AllocRecording rec = RecordAlloc("--alloc", {TargetPath(c.target)});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    auto near = [](double ours, double theirs) {
      EXPECT_NEAR(ours, theirs, 0.01 * theirs + 1) << "ours " << ours << ", heaptrack " << theirs;
    };
    near(static_cast<double>(Exact(rec, "allocation_calls")), ht->calls - c.heaptrack_extra_calls);
    near(static_cast<double>(Exact(rec, "temporary_allocations")), ht->temporary);
    // heaptrack prints the peak rounded to 4 digits.
    EXPECT_NEAR(static_cast<double>(Exact(rec, "peak_heap_bytes")),
                ht->peak - c.heaptrack_extra_peak, 0.01 * ht->peak);
    // A thread's DTV (glibc keeps it: a "leak") grows with the TLS modules loaded, and each
    // preload brings its own: 16 B apart per thread.
    EXPECT_NEAR(static_cast<double>(Exact(rec, "leaked_bytes")), ht->leaked,
                std::max(0.01 * ht->leaked, 64.0));
  }
}

// Allocations (or temporaries) per function, from folded text (ours or heaptrack_print -F: "a;b;c
// COUNT", root first): the stacks with a frame containing `function`, each counted once. Our
// frames are "alloc_rust::work::vec_growth", heaptrack's "alloc_rust::work::vec_growth::h12..
// (alloc_rust.rs)", so a substring names the same function in both.
uint64_t CountThrough(const std::string& folded, const std::string& function) {
  uint64_t n = 0;
  std::istringstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    if (line.substr(0, space).find(function) != std::string::npos) {
      n += std::strtoull(line.c_str() + space + 1, nullptr, 10);
    }
  }
  return n;
}

// The top call sites against heaptrack's, per site. heaptrack_print exports per-stack costs only
// as allocation, temporary, peak and leaked counts (no bytes allocated per site; those are
// checked against the construction above), so the sites are compared by calls and temporaries:
// every allocating function of the C++ and Rust targets, within 1 %, which also gives the same
// ranking.
TEST(AllocTest, TopSitesAgreeWithHeaptrack) {
  NP_SKIP_IF_NO_PERF();
  if (RunCommand({"heaptrack", "--version"}).exit_code != 0) {
    GTEST_SKIP() << "heaptrack is not installed (tools/setup.sh installs it)";
  }
  struct Case {
    const char* target;
    std::vector<std::string> functions;
  };
  const Case cases[] = {
      {"alloc_cxx",
       {"new_delete_nodes", "build_strings", "vector_growth", "thread_allocates_nodes"}},
      {"alloc_rust", {"work::vec_growth", "work::string_building", "work::hashmap_insertion"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    const std::string dir = MakeTempDir();
    ASSERT_EQ(RunCommand({"heaptrack", "-o", dir + "/ht", TargetPath(c.target)}).exit_code, 0);
    std::string theirs[2];
    const char* cost_types[2] = {"allocations", "temporary"};
    for (int i = 0; i < 2; ++i) {
      const std::string stacks = absl::StrCat(dir, "/", cost_types[i], ".txt");
      CommandResult print = RunCommand({"heaptrack_print", dir + "/ht.zst", "-F", stacks,
                                        "--flamegraph-cost-type", cost_types[i]});
      ASSERT_EQ(print.exit_code, 0) << print.err;
      theirs[i] = ReadFileOrEmpty(stacks);
    }
    AllocRecording rec = RecordAlloc("--alloc=1", {TargetPath(c.target)});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    const std::string stem = rec.folded.substr(0, rec.folded.size() - 7);
    const std::string ours[2] = {ReadFileOrEmpty(stem + ".allocs.folded"),
                                 ReadFileOrEmpty(stem + ".temporary.folded")};
    for (int i = 0; i < 2; ++i) {
      SCOPED_TRACE(cost_types[i]);
      uint64_t sites_seen = 0;
      for (const std::string& f : c.functions) {
        const double h = static_cast<double>(CountThrough(theirs[i], f));
        const double o = static_cast<double>(CountThrough(ours[i], f));
        EXPECT_NEAR(o, h, 0.01 * h + 1) << f << ": ours " << o << ", heaptrack " << h;
        sites_seen += h > 0;
      }
      if (i == 0) {
        EXPECT_EQ(sites_seen, c.functions.size()) << theirs[i].substr(0, 2000);
      }
    }
  }
}

// A program with an allocator of its own (here: mmap) grows its RSS while malloc sees nothing: one
// line names the likely cause and the fix. A program whose heap explains its RSS gets no such
// line.
TEST(AllocTest, AnAllocatorOfItsOwnIsNamed) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording own = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "mmap"});
  ASSERT_EQ(own.result.exit_code, 0) << own.result.err;
  EXPECT_THAT(own.result.err, HasSubstr("the rest came another way, from mapped files or mmap"));
  EXPECT_THAT(own.result.err, HasSubstr("build it without that allocator"));
  AllocRecording plain = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "sites"});
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  EXPECT_THAT(plain.result.err, ::testing::Not(HasSubstr("the rest came another way")));
  // The same when nativeprof's process reaped a larger child before its exec, as cargo
  // nativeprof's build is: the RSS is the target's own, not the largest of those children's
  // (which hid it, and the line with it).
  const std::string out = MakeTempDir() + "/after.folded";
  const std::string workload = TargetPath("alloc_workload");
  CommandResult after = RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat(workload, " mmap 160 && exec ", NativeprofBinary(),
                    " record --no-counters --alloc -o ", out, " -- ", workload, " mmap")});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_THAT(after.err, HasSubstr("the rest came another way, from mapped files or mmap"));
  EXPECT_THAT(after.err, ::testing::ContainsRegex("peak RSS 10[0-9]\\.[0-9] MB"));
}

// A program that forbids itself the TSC (rr's tracees, some sandboxes) ran until its next
// record, whose time the preload read from the TSC (or from the vDSO's clock_gettime, which
// reads it too): SIGSEGV. It runs to its end now, counted exactly, at both rates.
TEST(AllocTest, AProgramThatForbidsTheTscRuns) {
  NP_SKIP_IF_NO_PERF();
  for (const char* rate : {"--alloc", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "notsc"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    ExpectSitesTotals(rec, 1);
  }
}

// A user's LD_PRELOAD that replaces malloc (jemalloc, tcmalloc; here a stand-in whose free and
// malloc_usable_size abort on blocks of another allocator, as jemalloc's do) would get none of
// the allocations the hooks forward to glibc, yet its malloc_usable_size and operator new would
// be called: the program died. `record --alloc` leaves it out, in one line, and counts everything.
TEST(AllocTest, AUsersPreloadedAllocatorIsLeftOut) {
  NP_SKIP_IF_NO_PERF();
  const std::string standin = TargetPath("liballoc_standin.so");
  const std::string folded = MakeTempDir() + "/alloc.folded";
  CommandResult r = RunCommand({"/usr/bin/env", absl::StrCat("LD_PRELOAD=", standin),
                                NativeprofBinary(), "record", "--no-counters", "--alloc", "-o",
                                folded, "--", TargetPath("alloc_workload"), "realloc"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // alloc_workload's own checks of realloc and friends
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("LD_PRELOAD's ", standin,
                                            " replaces malloc: left out of this run")));
  // The sites mode under it: every allocation counted, as the construction says.
  CommandResult sites = RunCommand({"/usr/bin/env", absl::StrCat("LD_PRELOAD=", standin),
                                    NativeprofBinary(), "record", "--no-counters", "--alloc", "-o",
                                    folded, "--", TargetPath("alloc_workload"), "sites"});
  ASSERT_EQ(sites.exit_code, 0) << sites.err;
  AllocRecording rec;
  rec.exact = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr,
                                    false)["allocations"]["exact"];
  ExpectSitesTotals(rec, 1);

  // A program that preloads one itself, after the library: the hooks still forward to glibc,
  // and malloc_usable_size is glibc's too (it was the stand-in's, which aborted).
  AllocRecording inner = RecordAlloc(
      "--alloc", {"/bin/sh", "-c",
                  absl::StrCat("LD_PRELOAD=\"$LD_PRELOAD:", standin, "\" ",
                               TargetPath("alloc_workload"), " realloc")});
  EXPECT_EQ(inner.result.exit_code, 0) << inner.result.err;
}

// The command is checked for an allocator of its own (BadUsesAreRefusedWithOneLine); a program
// it starts is not, and runs with the library. Blocks that allocator handed out itself (jemalloc's
// operator new) came to the library's free, which gave them to glibc's: a C++ program linked to
// libjemalloc died with "free(): invalid pointer" (134) under a shell, and this one exited 13
// (glibc's malloc_usable_size of the stand-in's block). They now go back to the program's
// allocator, which the library forwards to, and the calls that reach it are counted.
TEST(AllocTest, AProgramsOwnAllocatorKeepsItsBlocks) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc(
      "--alloc=1", {"/bin/sh", "-c", TargetPath("alloc_linked_standin") + " foreignfree"});
  EXPECT_EQ(rec.result.exit_code, 0) << rec.result.err;
  ASSERT_TRUE(rec.exact.is_object()) << rec.result.err;
  // The 1,000 mallocs and the 1,000 reallocs, which move a foreign block into one of the
  // library's; the shell's own come on top.
  for (const char* key : {"allocation_calls", "free_calls"}) {
    ASSERT_TRUE(rec.exact.contains(key)) << key << " " << rec.exact.dump();
    EXPECT_GE(Exact(rec, key), 2000u) << rec.exact.dump();
  }
}

// A program the command starts but the library cannot reach (a static binary here, one that
// changed to another user below) is named, instead of its allocations silently missing.
TEST(AllocTest, ProgramsTheLibraryCannotReachAreNamed) {
  NP_SKIP_IF_NO_PERF();
  const std::string both =
      absl::StrCat(TargetPath("alloc_static"), " sites && ", TargetPath("alloc_workload"), " sites");
  AllocRecording mixed = RecordAlloc("--alloc", {"/bin/sh", "-c", both});
  ASSERT_EQ(mixed.result.exit_code, 0) << mixed.result.err;
  EXPECT_THAT(mixed.result.err, HasSubstr("1 program started by the command ran without the "
                                          "allocation library and is not counted: alloc_static ["));
  ASSERT_EQ(mixed.allocations["unhooked_processes"].size(), 1u) << mixed.allocations.dump();
  EXPECT_EQ(mixed.allocations["unhooked_processes"][0]["command"], "alloc_static");
  // alloc_workload, which loaded it, is counted.
  EXPECT_GE(mixed.exact["allocation_calls"].get<uint64_t>(), 1000u) << mixed.allocations.dump();

  // Background programs exec'd as the command ends, still starting when the recording stops:
  // not named (one in three runs of a single `(sleep 1 &)` named sleep before).
  for (int run = 0; run < 3; ++run) {
    AllocRecording starting = RecordAlloc(
        "--alloc", {"/bin/sh", "-c", "for i in 1 2 3 4 5 6; do (sleep 0.5 &); done; exit 0"});
    ASSERT_EQ(starting.result.exit_code, 0) << starting.result.err;
    EXPECT_THAT(starting.result.err, ::testing::Not(HasSubstr("without the allocation library")));
  }

  // A chain of execs that all load the library: nothing named.
  AllocRecording execs = RecordAlloc("--alloc", {TargetPath("alloc_workload"), "execs", "3"});
  ASSERT_EQ(execs.result.exit_code, 0) << execs.result.err;
  EXPECT_THAT(execs.result.err, ::testing::Not(HasSubstr("without the allocation library")));
  EXPECT_TRUE(execs.allocations["unhooked_processes"].empty()) << execs.allocations.dump();

  if (::geteuid() != 0 || ::access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "the change of user needs root and setpriv (util-linux)";
  }
  // setpriv loads the library as root, then execs the program as nobody, who cannot open the
  // channel nativeprof made (mode 0600).
  AllocRecording nobody = RecordAlloc(
      "--alloc", {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                  TargetPath("alloc_workload"), "sites"});
  ASSERT_EQ(nobody.result.exit_code, 0) << nobody.result.err;
  EXPECT_THAT(nobody.result.err, HasSubstr("ran without the allocation library and is not "
                                           "counted: alloc_workload ["));
}

// A program that closes the descriptors it did not open and reuses their numbers gets nothing
// of the library's in its files. The library kept the wake FIFO open once and wrote its wake
// bytes to whatever file took that number: "kept\nwwwwwwww...".
TEST(AllocTest, DescriptorsTheProgramReusesAreNotWrittenTo) {
  NP_SKIP_IF_NO_PERF();
  const std::string file = MakeTempDir() + "/program.log";
  AllocRecording rec = RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "closefds", file});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  EXPECT_EQ(ReadFileOrEmpty(file), "kept\n");
  EXPECT_EQ(rec.exact["allocation_calls"], 2 * 1'326'210) << rec.exact.dump();
}

// A program that has used up its descriptors: the library cannot open /proc/self/maps to find
// where a thread's stack ends. Its samples came without stacks before (named [unknown], with
// advice about frame pointers); the stack's end is now taken from what glibc knows of it.
TEST(AllocTest, StacksAreCopiedWhenTheProgramHasNoDescriptorLeft) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec = RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "nofiles"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  EXPECT_EQ(Exact(rec, "allocation_calls"), 1'326'210u + 201'000u + 1u);  // + the thread's DTV
  EXPECT_EQ(Exact(rec, "temporary_allocations"), 1'310'720u + 200'000u);
  FoldedProfile count = rec.View("allocs");
  ASSERT_TRUE(count.errors().empty()) << count.errors().front();
  EXPECT_EQ(count.WithSequence({"run_sites", "small_temporaries"}), 1'310'720u);
  EXPECT_EQ(count.WithSequence({"ThreadMain", "thread_temporaries"}), 200'000u);
  EXPECT_EQ(count.WithSequence({"ThreadMain", "thread_keep_blocks"}), 1'000u);
  // Every stack is whole: the main thread's (its sites and the thread's DTV) reach _start, the
  // thread's its start.
  EXPECT_EQ(count.WithSequence({"_start", "__libc_start_main"}), 1'326'210u + 1u);
  EXPECT_EQ(count.WithSequence({"clone3", "start_thread", "ThreadMain"}), 201'000u);
}

// A writer that stops while it holds the ring's lock (its process killed, its thread cancelled)
// hung the whole run: every later sampled allocation waited for the lock forever. The killed
// children hung every run, the cancelled threads one run in three.
TEST(AllocTest, WritersThatStopInsideTheLibraryDoNotHangTheRun) {
  NP_SKIP_IF_NO_PERF();
  AllocRecording rec =
      RecordAlloc("--alloc=1", {TargetPath("alloc_workload"), "interrupted-writers"}, {"--no-cpu"});
  ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
  nlohmann::json meta =
      nlohmann::json::parse(ReadFileOrEmpty(rec.folded + ".json"), nullptr, false);
  ASSERT_TRUE(meta.is_object());
  // 0.3 s unprofiled here; a lock taken over after its holder's process is gone costs 10 ms.
  EXPECT_LT(meta["duration_seconds"].get<double>(), 60.0) << rec.result.err;
  // Each writer made at least 1,000 calls before it was stopped (the workload waits for them):
  // 30 children, the parent's 100 a round, 200 threads.
  EXPECT_GE(rec.exact["allocation_calls"].get<uint64_t>(), 30 * 1000 + 30 * 100 + 200 * 1000);
}

TEST(AllocTest, BadUsesAreRefusedWithOneLine) {
  // A static binary: its malloc cannot be interposed.
  CommandResult st = RunCommand({NativeprofBinary(), "record", "--alloc", "-o",
                                 MakeTempDir() + "/s.folded", "--", TargetPath("alloc_static")});
  EXPECT_EQ(st.exit_code, 2);
  EXPECT_THAT(st.err, HasSubstr("statically linked"));
  // Programs whose malloc is not glibc's: one linked to an allocator (whose own blocks cannot
  // be told from the library's for certain), an ASan build (which does not start) and one that
  // defines malloc itself (rustc, chromium; never seen). Refused before they start, nothing
  // written. (A program the command starts is not checked: AProgramsOwnAllocatorKeepsItsBlocks.)
  for (const char* target : {"alloc_linked_standin", "alloc_own_malloc"}) {
    SCOPED_TRACE(target);
    const std::string dir = MakeTempDir();
    CommandResult own = RunCommand({NativeprofBinary(), "record", "--alloc", "-o",
                                    dir + "/o.folded", "--", TargetPath(target), "sites"});
    EXPECT_EQ(own.exit_code, 2) << own.err;
    EXPECT_THAT(own.err, HasSubstr(std::string(target) == "alloc_own_malloc"
                                       ? "defines malloc itself"
                                       : "links liballoc_standin.so, which replaces malloc"));
    EXPECT_EQ(std::count(own.err.begin(), own.err.end(), '\n'), 1) << own.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/o.folded"));
  }
  // Started by the command, such a program runs (nothing can be checked before it starts), and
  // is named as not counted: it used to show as a process that allocated nothing.
  AllocRecording child =
      RecordAlloc("--alloc", {"/bin/sh", "-c", TargetPath("alloc_own_malloc") + " sites"});
  ASSERT_EQ(child.result.exit_code, 0) << child.result.err;
  EXPECT_THAT(child.result.err,
              ::testing::ContainsRegex("1 program called a malloc of its own, .* and is not "
                                       "counted: alloc_own_mallo \\[[0-9]+\\]"));
  ASSERT_EQ(child.allocations["malloc_elsewhere_processes"].size(), 1u) << child.result.err;
  EXPECT_EQ(child.allocations["malloc_elsewhere_processes"][0]["command"], "alloc_own_mallo");
  // The shell's own malloc is the library's.
  AllocRecording plain = RecordAlloc("--alloc", {"/bin/sh", "-c", "true"});
  EXPECT_THAT(plain.result.err, ::testing::Not(HasSubstr("a malloc of its own")));
  EXPECT_EQ(plain.allocations["malloc_elsewhere_processes"].size(), 0u) << plain.result.err;
  CommandResult attach = RunCommand({NativeprofBinary(), "record", "--alloc", "-p", "1"});
  EXPECT_EQ(attach.exit_code, 2);
  EXPECT_THAT(attach.err, HasSubstr("--alloc loads its library into the command it starts"));
  CommandResult rate = RunCommand({NativeprofBinary(), "record", "--alloc=0", "--", "true"});
  EXPECT_EQ(rate.exit_code, 2);
  EXPECT_THAT(rate.err, HasSubstr("--alloc=0"));
}

// A leak none of whose blocks was sampled: report says why there is no table of leaked call
// sites (it was left out without a word, the summary showing the exact leak).
TEST(AllocTest, AnUnsampledLeakIsExplained) {
  NP_SKIP_IF_NO_PERF();
  for (const char* rate : {"--alloc=1024G", "--alloc=1"}) {
    SCOPED_TRACE(rate);
    AllocRecording rec = RecordAlloc(rate, {TargetPath("alloc_workload"), "_exit"});
    ASSERT_EQ(rec.result.exit_code, 0) << rec.result.err;
    const std::string view = rec.folded.substr(0, rec.folded.size() - 7) + ".alloc.folded";
    CommandResult report = RunCommand({NativeprofBinary(), "report", view});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    if (std::string(rate) == "--alloc=1") {
      EXPECT_THAT(report.out, Not(HasSubstr("No leaked block was sampled")));
      EXPECT_THAT(report.out, HasSubstr("bytes leaked"));
    } else {
      EXPECT_THAT(report.out, HasSubstr("No leaked block was sampled, so no leaked call site is "
                                        "shown (3,000 B leaked in 3 blocks, exact)"));
    }
  }
}

}  // namespace
}  // namespace nativeprof::testing
