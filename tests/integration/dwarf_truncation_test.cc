// `record --call-graph dwarf[,SIZE]` on recursion deeper than the stack copy: stacks cut short are
// counted as truncated in the metadata, a bigger SIZE removes them, and with frame pointers the
// kernel's chain finishes them (the hybrid splice).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using testing::MakeTempDir;
using testing::NativeprofBinary;
using testing::ReadFileOrEmpty;
using testing::RunCommand;
using testing::TargetPath;

struct UnwindFigures {
  double samples = 0, complete = 0, truncated = 0, spliced = 0;
  size_t deepest = 0;  // the most `recursion` frames in one stack
  // Samples whose leaf is `recursion`, by how many `recursion` frames their stack has.
  std::map<size_t, double> leaf_samples_by_depth;
};

UnwindFigures Record(const std::string& call_graph, const std::vector<std::string>& target,
                     absl::string_view recursion = "DeepRecurse",
                     const std::string& unwinder = "native") {
  const std::string out = MakeTempDir() + "/out.folded";
  std::vector<std::string> argv = {NativeprofBinary(), "record", "--call-graph", call_graph,
                                   "--unwinder", unwinder, "-F", "999", "-o", out, "--"};
  argv.insert(argv.end(), target.begin(), target.end());
  testing::CommandResult r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(out + ".json"), nullptr, false);
  UnwindFigures f;
  if (meta.is_discarded() || !meta.contains("unwind")) {
    ADD_FAILURE() << "no unwind figures in " << out << ".json; stderr: " << r.err;
    return f;
  }
  const nlohmann::json& u = meta["unwind"];
  f.samples = meta.value("samples", 0.0);
  f.complete = u["ends"].value("complete", 0.0);
  f.truncated = u["ends"].value("truncated-stack-copy", 0.0);
  f.spliced = u.value("spliced", 0.0);
  const std::string folded = ReadFileOrEmpty(out);
  for (absl::string_view line : absl::StrSplit(folded, '\n', absl::SkipEmpty())) {
    const size_t space = line.rfind(' ');
    const absl::string_view stack = line.substr(0, space);
    size_t frames = 0;
    for (absl::string_view frame : absl::StrSplit(stack, ';')) frames += frame == recursion;
    f.deepest = std::max(f.deepest, frames);
    if (stack.substr(stack.rfind(';') + 1) == recursion) {
      f.leaf_samples_by_depth[frames] += std::atof(std::string(line.substr(space + 1)).c_str());
    }
  }
  std::printf("%s: %.0f samples, %.0f complete, %.0f truncated, %.0f spliced\n",
              call_graph.c_str(), f.samples, f.complete, f.truncated, f.spliced);
  return f;
}

// DeepRecurse(200) frames take ~128 bytes each: ~25 KiB of stack, beyond the default 8 KiB copy.
TEST(DwarfTruncationTest, DeepRecursionIsCountedAndABiggerCopyFixesIt) {
  NP_SKIP_IF_NO_PERF();
  const std::vector<std::string> target = {TargetPath("nofp_workload"), "1", "1", "40", "200"};
  UnwindFigures small = Record("dwarf", target);
  ASSERT_GT(small.samples, 50);
  EXPECT_GT(small.truncated / small.samples, 0.05);
  UnwindFigures big = Record("dwarf,32768", target);
  ASSERT_GT(big.samples, 50);
  EXPECT_LT(big.truncated / big.samples, 0.01);
  EXPECT_GE(big.complete / big.samples, 0.99);
}

// With frame pointers, recursion of depth 100 (~13 KiB) outgrows the copy but not the kernel's
// 127-entry chain: the splice finishes those stacks, at the level the unwind reached. Every
// level returns to the same address; joining at the chain's first one (the innermost) repeated
// the levels the unwind already had: stacks of up to ~160 DeepRecurse frames.
TEST(DwarfTruncationTest, KernelChainFinishesTruncatedStacks) {
  NP_SKIP_IF_NO_PERF();
  UnwindFigures f = Record("dwarf", {TargetPath("dwarf_fp_deep"), "1", "1", "40", "100"});
  ASSERT_GT(f.samples, 50);
  EXPECT_GT(f.spliced / f.samples, 0.05);
  EXPECT_GE(f.complete / f.samples, 0.99);
  EXPECT_GE(f.deepest, 90u);
  EXPECT_LE(f.deepest, 101u);  // DeepRecurse(100) down to DeepRecurse(0)
}

// The innermost level of a recursion 100 deep (101 levels) spends its time on a path with no
// frame of its own, where rbp is still its caller's: the kernel's chain lacks the leaf's return
// address. Joined without knowing that, every such stack lost one level (100, not 101).
TEST(DwarfTruncationTest, ARecursionSampledOutsideItsFrameKeepsEveryLevel) {
  NP_SKIP_IF_NO_PERF();
  for (const char* unwinder : {"native", "libunwind"}) {
    SCOPED_TRACE(unwinder);
    UnwindFigures f = Record("dwarf", {TargetPath("fp_edge_recurse"), "0.6", "100"},
                             "EdgeRecurse", unwinder);
    ASSERT_GT(f.samples, 50);
    EXPECT_GT(f.spliced / f.samples, 0.5);
    EXPECT_LE(f.deepest, 101u);
    double leaf = 0;
    for (const auto& [depth, n] : f.leaf_samples_by_depth) leaf += n;
    // The descent and return through 100 frames take ~1 % of the time; the innermost level's
    // loop the rest.
    EXPECT_GT(f.leaf_samples_by_depth[101] / leaf, 0.9) << "of " << leaf << " in EdgeRecurse";
  }
}

}  // namespace
}  // namespace nativeprof
