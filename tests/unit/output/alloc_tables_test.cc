#include "output/alloc_tables.h"

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::output {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json Meta(uint64_t calls, uint64_t temporary, uint64_t peak) {
  return {{"allocations",
           {{"rate_bytes", 524288},
            {"sampling", {{"sampled_allocations", 12}}},
            {"exact",
             {{"allocation_calls", calls},
              {"allocated_bytes", 1000},
              {"temporary_allocations", temporary},
              {"peak_heap_bytes", peak},
              {"leaked_bytes", 10},
              {"leaked_blocks", 1},
              {"calls_per_second", 50.0}}}}}};
}

TEST(AllocTablesTest, SummaryHasTheExactTotals) {
  const std::string s = RenderAllocSummary(Meta(200, 50, 4096));
  EXPECT_THAT(s, HasSubstr("calls to allocation functions  200 (50/s)"));
  EXPECT_THAT(s, HasSubstr("50 (25.0 % of calls)"));
  EXPECT_THAT(s, HasSubstr("peak heap                      4,096 B"));
  EXPECT_THAT(s, HasSubstr("10 B in 1 block"));
  EXPECT_THAT(s, HasSubstr("12 allocations sampled, one per 524,288 B"));
  EXPECT_EQ(RenderAllocSummary(nlohmann::json::object()), "");
}

TEST(AllocTablesTest, TotalsDiffShowsEachChange) {
  const std::string d = RenderAllocTotalsDiff(Meta(115828, 115828, 2000000000), Meta(10, 0, 14000));
  EXPECT_THAT(d, HasSubstr("temporary allocations"));
  EXPECT_THAT(d, HasSubstr("115,828 -> 0"));
  EXPECT_THAT(d, HasSubstr("-100.0 %"));
  EXPECT_THAT(d, HasSubstr("2,000,000,000 -> 14,000"));
  EXPECT_EQ(RenderAllocTotalsDiff(Meta(1, 1, 1), nlohmann::json()), "");
}

TEST(AllocTablesTest, SitesSkipAllocatorPlumbing) {
  symbolize::Profile p;
  for (const char* f : {"main", "build_index", "std::vector<int>::_M_realloc_insert",
                        "operator new", "parse", "alloc::raw_vec::finish_grow"}) {
    symbolize::ProfileFrame frame;
    frame.function = f;
    p.frames.push_back(frame);
  }
  symbolize::ProfileStack a;
  a.frames = {0, 1, 2, 3};
  a.samples = 300;
  symbolize::ProfileStack b;
  b.frames = {0, 4, 5};
  b.samples = 100;
  p.stacks = {a, b};
  const std::vector<AllocCallSite> sites = TopAllocCallSites(p, 10);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].name, "build_index (via std::vector<int>::_M_realloc_insert)");
  EXPECT_EQ(sites[0].value, 300u);
  EXPECT_EQ(sites[1].name, "parse (via alloc::raw_vec::finish_grow)");
  EXPECT_THAT(RenderAllocCallSites("bytes allocated", sites, 400, "bytes"),
              HasSubstr("75.00%                 300 B  build_index"));
  // Markdown: a table, names as code spans (`<` and `_` as they are).
  const std::string md =
      RenderAllocCallSites("bytes allocated", sites, 400, "bytes", TableFormat::kMarkdown);
  EXPECT_THAT(md, HasSubstr("**Top 2 call sites by bytes allocated**\n\n| share | bytes |"));
  EXPECT_THAT(RenderAllocCallSites("bytes leaked", {sites[0]}, 400, "bytes"),
              HasSubstr("Top call site by bytes leaked\n"));
  EXPECT_THAT(md, HasSubstr("| 75.00% | 300 B | `build_index (via "
                            "std::vector<int>::_M_realloc_insert)` |"));
}

// Rust's standard library is compiled into the program: the site is the program's frame that
// called into it, named with the library function it called. A trait method the program
// implements itself is a site.
TEST(AllocTablesTest, RustSitesAreTheProgramsCallsIntoTheStandardLibrary) {
  symbolize::Profile p;
  for (const char* f : {"words::count", "<str>::to_lowercase", "alloc::str::convert_while_ascii",
                        "<alloc::raw_vec::RawVecInner>::finish_grow", "__rust_alloc", "malloc",
                        "<words::Tokens as core::iter::traits::iterator::Iterator>::next",
                        "<alloc::string::String>::push_str",
                        "<words::Counting as core::alloc::global::GlobalAlloc>::alloc"}) {
    symbolize::ProfileFrame frame;
    frame.function = f;
    p.frames.push_back(frame);
  }
  symbolize::ProfileStack a;
  a.frames = {0, 1, 2, 3, 4, 5};
  a.samples = 300;
  symbolize::ProfileStack b;
  b.frames = {0, 6, 7, 3, 4, 5};
  b.samples = 100;
  // A #[global_allocator] that wraps the system one is plumbing too.
  symbolize::ProfileStack c;
  c.frames = {0, 1, 2, 3, 8, 5};
  c.samples = 50;
  p.stacks = {a, b, c};
  const std::vector<AllocCallSite> sites = TopAllocCallSites(p, 10);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].name, "words::count (via <str>::to_lowercase)");
  EXPECT_EQ(sites[0].value, 350u);
  EXPECT_EQ(sites[1].name,
            "<words::Tokens as core::iter::traits::iterator::Iterator>::next (via "
            "<alloc::string::String>::push_str)");
}

// GCC's and coreutils' xmalloc, GLib's g_malloc0: the site is the caller of the wrapper.
TEST(AllocTablesTest, SitesSkipCheckedAllocationWrappers) {
  symbolize::Profile p;
  for (const char* f : {"main", "parse_decl", "xmalloc", "malloc", "new_node", "g_malloc0"}) {
    symbolize::ProfileFrame frame;
    frame.function = f;
    p.frames.push_back(frame);
  }
  symbolize::ProfileStack a;
  a.frames = {0, 1, 2, 3};
  a.samples = 30;
  symbolize::ProfileStack b;
  b.frames = {0, 4, 5, 3};
  b.samples = 10;
  p.stacks = {a, b};
  const std::vector<AllocCallSite> sites = TopAllocCallSites(p, 10);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].name, "parse_decl (via xmalloc)");
  EXPECT_EQ(sites[1].name, "new_node (via g_malloc0)");
}

// The C and C++ runtime's own functions, whatever their names: printf's buffer is main's
// allocation (via printf), a user's shared library is the program's code, and a stack that is the
// runtime's alone (libstdc++'s start-up pool, run by the loader) is named by its names.
TEST(AllocTablesTest, SitesSkipTheRuntimeLibrariesFrames) {
  symbolize::Profile p;
  for (const char* f : {"main", "printf", "__vfprintf_internal", "_IO_file_doallocate", "malloc",
                        "parse_config", "_dl_start_user", "call_init", "[libstdc++.so.6.0.30]"}) {
    symbolize::ProfileFrame frame;
    frame.function = f;
    p.frames.push_back(frame);
  }
  const FrameModuleMap modules = {{"main", "app"},
                                  {"printf", "libc.so.6"},
                                  {"__vfprintf_internal", "libc.so.6"},
                                  {"_IO_file_doallocate", "libc.so.6"},
                                  {"malloc", "libnativeprof_alloc.so"},
                                  {"parse_config", "libappconfig.so"},
                                  {"_dl_start_user", "ld-linux-x86-64.so.2"},
                                  {"call_init", "ld-linux-x86-64.so.2"},
                                  {"[libstdc++.so.6.0.30]", "libstdc++.so.6.0.30"}};
  symbolize::ProfileStack a;
  a.frames = {0, 1, 2, 3, 4};
  a.samples = 40;
  symbolize::ProfileStack b;
  b.frames = {0, 5, 4};
  b.samples = 30;
  symbolize::ProfileStack c;
  c.frames = {6, 7, 8, 4};
  c.samples = 20;
  p.stacks = {a, b, c};
  const std::vector<AllocCallSite> sites = TopAllocCallSites(p, 10, &modules);
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0].name, "main (via printf)");
  EXPECT_EQ(sites[1].name, "parse_config (via malloc)");
  EXPECT_EQ(sites[2].name, "[libstdc++.so.6.0.30] (via malloc)");
  // Without the table, names alone.
  EXPECT_EQ(TopAllocCallSites(p, 10)[0].name, "_IO_file_doallocate (via malloc)");
}

// The one site of a single stack of `frames` (root first: name, module as FrameModuleMap has it).
std::string SiteOfOneStack(std::initializer_list<std::pair<const char*, const char*>> frames) {
  symbolize::Profile p;
  FrameModuleMap modules;
  symbolize::ProfileStack s;
  for (const auto& [name, module] : frames) {
    symbolize::ProfileFrame frame;
    frame.function = name;
    s.frames.push_back(static_cast<uint32_t>(p.frames.size()));
    p.frames.push_back(frame);
    modules[name] = module;
  }
  s.samples = 4;
  p.stacks = {s};
  const std::vector<AllocCallSite> sites = TopAllocCallSites(p, 10, &modules);
  return sites.size() == 1 ? sites[0].name : absl::StrCat(sites.size(), " sites");
}

// A Rust thread's start allocates in glibc (its guard page's pthread_getattr_np, a thread-local
// destructor's registration) under the standard library's frames only: the site is the standard
// library's frame that called the C library, not a glibc internal.
TEST(AllocTablesTest, AThreadStartIsNamedByTheStandardLibrarysFrame) {
  EXPECT_EQ(SiteOfOneStack({{"clone3", "libc.so.6"},
                            {"start_thread", "libc.so.6"},
                            {"<std::sys::pal::unix::thread::Thread>::new::thread_start", "app"},
                            {"std::sys::pal::unix::stack_overflow::imp::make_handler", "app"},
                            {"pthread_getattr_np", "libc.so.6"},
                            {"malloc", "libnativeprof_alloc.so"}}),
            "std::sys::pal::unix::stack_overflow::imp::make_handler (via pthread_getattr_np)");
}

// A thread's name copied by the standard library alone: the site is the std frame that
// allocated, not Rust's allocation function it called.
TEST(AllocTablesTest, AStandardLibraryStackIsNotNamedByRustsAllocationFunctions) {
  EXPECT_EQ(
      SiteOfOneStack(
          {{"start_thread", "libc.so.6"},
           {"std::sys::pal::unix::stack_overflow::thread_info::set_current_info", "app"},
           {"alloc::alloc::exchange_malloc", "app"},
           {"alloc::alloc::alloc", "app"},
           {"__rust_alloc", "app"},
           {"malloc", "libnativeprof_alloc.so"}}),
      "std::sys::pal::unix::stack_overflow::thread_info::set_current_info (via "
      "alloc::alloc::exchange_malloc)");
}

// The heap profile for pprof: each stack ends at its site, by the frames' own modules (printf's
// buffer is main's), with the plumbing it called as the "via" label; stacks that meet merge.
TEST(AllocTablesTest, HeapStacksEndAtTheirSite) {
  symbolize::Profile p;
  const std::pair<const char*, const char*> frames[] = {
      {"main", "/usr/bin/app"},
      {"printf", "/lib/x86_64-linux-gnu/libc.so.6"},
      {"_IO_file_doallocate", "/lib/x86_64-linux-gnu/libc.so.6"},
      {"malloc", "/usr/lib/nativeprof/libnativeprof_alloc.so"},
      {"operator new", "/lib/x86_64-linux-gnu/libstdc++.so.6"},
      {"build", "/usr/bin/app"}};
  for (const auto& [function, module] : frames) {
    symbolize::ProfileFrame frame;
    frame.function = function;
    frame.module = module;
    p.frames.push_back(frame);
  }
  p.sample_types = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}};
  symbolize::ProfileStack a;
  a.thread_name = "app";
  a.tid = 7;
  a.frames = {0, 1, 2, 3};
  a.samples = 40;
  a.values = {1, 40};
  symbolize::ProfileStack b = a;
  b.frames = {0, 1, 3};  // the same site through a shorter path
  b.samples = 10;
  b.values = {2, 10};
  symbolize::ProfileStack c = a;
  c.frames = {0, 5, 4, 3};
  c.samples = 5;
  c.values = {1, 5};
  symbolize::ProfileStack d = a;
  d.frames = {0, 5};  // its own leaf is the site
  d.samples = 3;
  d.values = {3, 3};
  p.stacks = {a, b, c, d};
  const symbolize::Profile heap = AllocSiteStacks(p);
  ASSERT_EQ(heap.stacks.size(), 3u);
  EXPECT_EQ(heap.stacks[0].frames, (std::vector<uint32_t>{0}));
  EXPECT_EQ(heap.stacks[0].samples, 50u);
  EXPECT_EQ(heap.stacks[0].values, (std::vector<uint64_t>{3, 50}));
  EXPECT_EQ(heap.stacks[0].labels,
            (std::vector<std::pair<std::string, std::string>>{{"via", "printf"}}));
  EXPECT_EQ(heap.stacks[0].thread_name, "app");
  EXPECT_EQ(heap.stacks[0].tid, 7);
  EXPECT_EQ(heap.stacks[1].frames, (std::vector<uint32_t>{0, 5}));
  EXPECT_EQ(heap.stacks[1].labels,
            (std::vector<std::pair<std::string, std::string>>{{"via", "operator new"}}));
  EXPECT_EQ(heap.stacks[2].frames, (std::vector<uint32_t>{0, 5}));
  EXPECT_TRUE(heap.stacks[2].labels.empty());
  EXPECT_EQ(heap.frames, p.frames);
}

TEST(AllocTablesTest, SitesDiffGivesBothValuesLargestChangeFirst) {
  auto profile = [](std::vector<std::pair<const char*, uint64_t>> sites) {
    symbolize::Profile p;
    for (const auto& [name, bytes] : sites) {
      symbolize::ProfileFrame site;
      site.function = name;
      p.frames.push_back(site);
      symbolize::ProfileFrame malloc;
      malloc.function = "malloc";
      p.frames.push_back(malloc);
      symbolize::ProfileStack s;
      s.frames = {static_cast<uint32_t>(p.frames.size() - 2),
                  static_cast<uint32_t>(p.frames.size() - 1)};
      s.samples = bytes;
      p.stacks.push_back(s);
    }
    return p;
  };
  const symbolize::Profile before =
      profile({{"parse", 2'000'000'000}, {"tokenize", 4096}, {"init", 100}});
  const symbolize::Profile after = profile({{"parse", 14'000}, {"init", 100}, {"index", 500}});
  const std::string s = RenderAllocSitesDiff("bytes live at the peak", "bytes", before, nullptr,
                                             after, nullptr, 2);
  EXPECT_THAT(s, HasSubstr("Call sites by bytes live at the peak: before -> after (bytes)"));
  EXPECT_THAT(s, HasSubstr("2,000,004,196 -> 14,600"));
  EXPECT_THAT(s, HasSubstr("all sites"));
  const size_t parse = s.find("2,000,000,000 -> 14,000            -100.0 %  parse (via malloc)");
  const size_t tokenize = s.find("4,096 -> 0                 -100.0 %  tokenize (via malloc)");
  EXPECT_NE(parse, std::string::npos) << s;
  EXPECT_NE(tokenize, std::string::npos) << s;
  EXPECT_LT(parse, tokenize);
  // -n 2 leaves out the third change; init did not change.
  EXPECT_THAT(s, Not(HasSubstr("index")));
  EXPECT_THAT(s, HasSubstr("(1 smaller change not shown (-n); 1 site unchanged)"));
}

}  // namespace
}  // namespace nativeprof::output
