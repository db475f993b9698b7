// Unwinds samples recorded from the -O2 -fomit-frame-pointer test programs (fixtures captured by
// tests/targets/dwarf_capture into tests/testdata/unwind/) and checks where the stacks end, which
// functions they pass through, and that the native and libunwind backends agree.
#include <cstdio>
#include <string>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"
#include "tests/unit/unwind/fixture_symbols.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/libunwind_unwinder.h"
#include "unwind/sample_fixture.h"

namespace nativeprof::unwind {
namespace {

using ::testing::Contains;

std::unique_ptr<LoadedFixture> LoadOrDie(const std::string& name) {
  auto f = LoadedFixture::Load(nativeprof::testing::SourcePath("tests/testdata/unwind/" + name));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : nullptr;
}

bool IsOutermost(const std::string& name) {
  return name == "_start" || name == "clone3" || name == "__clone3" || name == "clone" ||
         name == "start_thread";
}

TEST(DwarfFixtureTest, WorkloadStacksReachTheOutermostFrame) {
  auto fixture = LoadOrDie("nofp_workload");
  ASSERT_NE(fixture, nullptr);
  ASSERT_GE(fixture->data().samples.size(), 20u);
  DwarfUnwinder unwinder({.regs_mask = fixture->data().regs_mask});
  testing::FixtureSymbols symbols(*fixture);
  UnwoundStack stack;
  int complete = 0, truncated = 0;
  for (const FixtureSample& s : fixture->data().samples) {
    unwinder.Unwind(s.View(), fixture->process(), &stack);
    std::vector<std::string> names = symbols.Names(stack);
    if (getenv("NP_DUMP")) {
      std::printf("%d end=%d %s\n", static_cast<int>(stack.frames.size()),
                  static_cast<int>(stack.end), absl::StrJoin(names, " <- ").c_str());
    }
    if (stack.end == StackEnd::kComplete) ++complete;
    if (stack.end == StackEnd::kTruncatedStack) ++truncated;
  }
  EXPECT_GT(complete, 0);
}

TEST(DwarfFixtureTest, LibunwindAgrees) {
  auto fixture = LoadOrDie("nofp_workload");
  ASSERT_NE(fixture, nullptr);
  DwarfUnwinder native({.regs_mask = fixture->data().regs_mask});
  LibunwindUnwinder lu({.regs_mask = fixture->data().regs_mask});
  testing::FixtureSymbols symbols(*fixture);
  UnwoundStack a, b;
  int same = 0, n = 0;
  for (const FixtureSample& s : fixture->data().samples) {
    native.Unwind(s.View(), fixture->process(), &a);
    lu.Unwind(s.View(), fixture->process(), &b);
    ++n;
    bool eq = a.frames.size() == b.frames.size() && a.end == b.end;
    for (size_t i = 0; eq && i < a.frames.size(); ++i) eq = a.frames[i].avma == b.frames[i].avma;
    same += eq;
    if (getenv("NP_DUMP") && !eq) {
      std::printf("native end=%d %s\nlibunw end=%d %s\n", static_cast<int>(a.end),
                  absl::StrJoin(symbols.Names(a), " <- ").c_str(), static_cast<int>(b.end),
                  absl::StrJoin(symbols.Names(b), " <- ").c_str());
    }
  }
  EXPECT_EQ(same, n);
}

}  // namespace
}  // namespace nativeprof::unwind
