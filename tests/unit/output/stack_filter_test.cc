#include "output/stack_filter.h"

#include <string>

#include "output/folded_reader.h"
#include "output/folded_writer.h"
#include "output/function_stats.h"
#include "tests/testing/test_support.h"

namespace nativeprof::output {
namespace {

symbolize::Profile Parse(const std::string& text) {
  absl::StatusOr<symbolize::Profile> p = ParseFolded(text);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : symbolize::Profile();
}

NameRegex Re(const std::string& pattern) {
  absl::StatusOr<NameRegex> re = NameRegex::Compile(pattern);
  EXPECT_TRUE(re.ok()) << re.status();
  return *std::move(re);
}

constexpr char kRust[] =
    "app;main;hotlib::run;core::ptr::drop_in_place<alloc::vec::Vec<u8>> 3\n"
    "app;main;hotlib::run;alloc::vec::Vec<T,A>::push 5\n"
    "app;main;hotlib::run 2\n"
    "app;main;std::io::stdio::_print;write;ksys_write_[k] 4\n"
    "app;core::ops::function::FnOnce::call_once 1\n";

TEST(NameRegexTest, SearchesAnywhereAndReportsErrors) {
  EXPECT_TRUE(Re("hotlib").Matches("<hotlib::Foo as core::fmt::Display>::fmt"));
  EXPECT_FALSE(Re("^hotlib").Matches("<hotlib::Foo as core::fmt::Display>::fmt"));
  EXPECT_TRUE(Re("^(core|alloc|std)::").Matches("alloc::vec::Vec<T,A>::push"));
  EXPECT_TRUE(Re("_\\[k\\]$").Matches("ksys_write_[k]"));
  absl::StatusOr<NameRegex> bad = NameRegex::Compile("(core");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(bad.status().message().empty());
}

TEST(StackFilterTest, NoFilterKeepsEverything) {
  const symbolize::Profile p = Parse(kRust);
  const FilteredProfile f = FilterStacks(p, {});
  EXPECT_EQ(f.all_samples, 15u);
  EXPECT_EQ(f.samples, 15u);
  EXPECT_EQ(RenderFolded(f.profile), RenderFolded(p));
}

TEST(StackFilterTest, FocusKeepsStacksThroughAMatchingFrame) {
  const NameRegex focus = Re("^hotlib::");
  const FilteredProfile f = FilterStacks(Parse(kRust), {.focus = &focus});
  EXPECT_EQ(f.all_samples, 15u);
  EXPECT_EQ(f.samples, 10u);
  EXPECT_EQ(RenderFolded(f.profile),
            "app;main;hotlib::run 2\n"
            "app;main;hotlib::run;alloc::vec::Vec<T,A>::push 5\n"
            "app;main;hotlib::run;core::ptr::drop_in_place<alloc::vec::Vec<u8>> 3\n");
  const NameRegex none = Re("no_such_function");
  EXPECT_EQ(FilterStacks(Parse(kRust), {.focus = &none}).samples, 0u);
}

TEST(StackFilterTest, HideDropsFramesMergesStacksAndKeepsTotals) {
  const NameRegex hide = Re("^(core|alloc|std)::");
  const FilteredProfile f = FilterStacks(Parse(kRust), {.hide = &hide});
  EXPECT_EQ(f.samples, 15u);
  // Both hotlib::run leaves merge: 3 + 5 + 2; the all-hidden stack keeps its thread.
  EXPECT_EQ(RenderFolded(f.profile),
            "app 1\n"
            "app;main;hotlib::run 10\n"
            "app;main;write;ksys_write_[k] 4\n");
  const FunctionTable t = CountFunctions(f.profile);
  EXPECT_EQ(t.samples, 15u);
  for (const FunctionCounts& fn : t.functions) {
    // The hidden leaves' self time is hotlib::run's now; hidden frames count nowhere.
    if (fn.name == "hotlib::run") EXPECT_EQ(fn.self, 10u);
    if (fn.name.rfind("alloc::", 0) == 0 || fn.name.rfind("core::", 0) == 0 ||
        fn.name.rfind("std::", 0) == 0) {
      EXPECT_EQ(fn.total, 0u) << fn.name;
    }
  }
}

TEST(StackFilterTest, FocusMatchesFramesBeforeHideRemovesThem) {
  const NameRegex focus = Re("^alloc::");
  const NameRegex hide = Re("^(core|alloc|std)::");
  const FilteredProfile f = FilterStacks(Parse(kRust), {.focus = &focus, .hide = &hide});
  EXPECT_EQ(f.samples, 5u);
  EXPECT_EQ(RenderFolded(f.profile), "app;main;hotlib::run 5\n");
}

TEST(StackFilterTest, HideMatchesTheSuffixedNameAndMergesWeightsAndTimeline) {
  symbolize::Profile p = Parse("app;main;read;ksys_read_[k] 2\napp;main;read 3\n");
  p.stacks[0].weight = 20;
  p.stacks[1].weight = 30;
  p.timeline = {{1, 0}, {2, 1}, {3, 0}};
  const NameRegex hide = Re("_\\[k\\]$");
  const FilteredProfile f = FilterStacks(p, {.hide = &hide});
  ASSERT_EQ(f.profile.stacks.size(), 1u);
  EXPECT_EQ(f.profile.stacks[0].samples, 5u);
  EXPECT_EQ(f.profile.stacks[0].weight, 50u);
  ASSERT_EQ(f.profile.timeline.size(), 3u);
  for (const symbolize::TimedSample& t : f.profile.timeline) EXPECT_EQ(t.stack, 0u);
}

}  // namespace
}  // namespace nativeprof::output
