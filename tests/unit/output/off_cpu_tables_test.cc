#include "output/off_cpu_tables.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "symbolize/profile.h"
#include "symbolize/profile_builder.h"

namespace nativeprof::output {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json TwoThreads() {
  return nlohmann::json::parse(R"({"off_cpu": {"threads": [
    {"name": "server", "tid": 41, "lifetime_ns": 2000000000, "on_cpu_ns": 500000000,
     "blocked_ns": 1400000000, "waiting_ns": 100000000, "ran": true},
    {"name": "idle|pipe", "tid": 42, "lifetime_ns": 2000000000, "on_cpu_ns": 0,
     "blocked_ns": 0, "waiting_ns": 2000000000, "ran": false}]}})");
}

TEST(OffCpuTablesTest, ThreadSplitAsTextAndMarkdown) {
  const std::string text = RenderThreadSplit(TwoThreads());
  EXPECT_THAT(text, HasSubstr("Threads (time in ms"));
  EXPECT_THAT(text, HasSubstr("idle|pipe (never ran)"));
  EXPECT_THAT(text, HasSubstr("1400.0   70.0%"));
  const std::string md = RenderThreadSplit(TwoThreads(), TableFormat::kMarkdown);
  EXPECT_THAT(md, HasSubstr("| thread | tid | lifetime | on-CPU | blocked | waiting for CPU |"));
  EXPECT_THAT(md, HasSubstr("| `server` | 41 | 2000.0 | 500.0 (25.0%) | 1400.0 (70.0%) | "
                            "100.0 (5.0%) |"));
  // A '|' in a thread name must not end the cell.
  EXPECT_THAT(md, HasSubstr("| `idle\\|pipe` (never ran) | 42 |"));
  EXPECT_EQ(RenderThreadSplit(nlohmann::json::object(), TableFormat::kMarkdown), "");
}

// A call site is the library function the program called and the program's frame that called
// it: for C the outermost frame in libc (pthread_cond_wait, not the futex helper it blocked in),
// for Rust the outermost frame of the standard library compiled into the program.
// Thousands of short threads would bury the report (2,005 lines): the longest-lived 40, and a
// line saying how many there are.
TEST(OffCpuTablesTest, TheThreadTableShowsTheLongestLivedOnly) {
  nlohmann::json meta = nlohmann::json::parse(R"({"off_cpu": {"threads": []}})");
  for (int i = 0; i < 100; ++i) {
    meta["off_cpu"]["threads"].push_back({{"name", "t" + std::to_string(i)},
                                          {"tid", 1000 + i},
                                          {"lifetime_ns", (i % 10 == 0 ? 1'000'000'000 : 1000)},
                                          {"on_cpu_ns", 0},
                                          {"blocked_ns", 0},
                                          {"waiting_ns", 0},
                                          {"ran", true}});
  }
  const std::string text = RenderThreadSplit(meta);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2 + 40 + 1) << text;
  EXPECT_THAT(text, HasSubstr("(the 40 longest-lived of 100 threads; the metadata JSON lists"));
  for (int i = 0; i < 100; i += 10) {
    EXPECT_THAT(text, HasSubstr("t" + std::to_string(i) + " ")) << i;  // the ten long ones
  }
  EXPECT_THAT(text, Not(HasSubstr("Upper bounds")));
  // Forty or fewer: all of them, and no such line. Records lost: the times are upper bounds.
  meta["off_cpu"]["threads"] = nlohmann::json::array();
  meta["lost"] = {{"records", 1234}, {"samples", 0}};
  EXPECT_THAT(RenderThreadSplit(meta), Not(HasSubstr("longest-lived")));
  EXPECT_THAT(RenderThreadSplit(meta), HasSubstr("Upper bounds: with 1,234 records lost"));
}

// A profile built frame by frame, each frame's module noted as record's metadata notes it.
struct ProfileWithModules {
  symbolize::Profile profile;
  FrameModuleMap modules;

  uint32_t Frame(const std::string& name, const std::string& module) {
    profile.frames.push_back({.function = name});
    modules[name] = module;
    return static_cast<uint32_t>(profile.frames.size() - 1);
  }
};

TEST(OffCpuTablesTest, ACallSiteIsWhereTheProgramCalledTheLibrary) {
  ProfileWithModules p;
  symbolize::Profile& profile = p.profile;
  FrameModuleMap& modules = p.modules;
  auto frame = [&](const std::string& name, const std::string& module) {
    return p.Frame(name, module);
  };
  const uint32_t main_c = frame("main", "server");
  const uint32_t wait = frame("wait_for_work", "server");
  const uint32_t cond = frame("pthread_cond_wait", "libc.so.6");
  const uint32_t futex = frame("__futex_abstimed_wait_common", "libc.so.6");
  profile.frames.push_back({.function = "schedule", .kind = symbolize::ProfileFrameKind::kKernel});
  const uint32_t kernel = static_cast<uint32_t>(profile.frames.size() - 1);
  profile.stacks.push_back({.frames = {main_c, wait, cond, futex, kernel}, .samples = 500});
  const uint32_t park = frame("tokio::runtime::park::Inner::park", "rs");
  const uint32_t condvar = frame("std::sync::poison::condvar::Condvar::wait", "rs");
  const uint32_t impl = frame("<std::sys::sync::condvar::futex::Condvar>::wait", "rs");
  const uint32_t std_futex = frame("std::sys::pal::unix::futex::futex_wait", "rs");
  const uint32_t syscall = frame("syscall", "libc.so.6");
  profile.stacks.push_back(
      {.frames = {park, condvar, impl, std_futex, syscall, kernel}, .samples = 300});
  // No caller at all: the whole stack is the library's.
  profile.stacks.push_back({.frames = {cond, futex, kernel}, .samples = 100});
  // A program that enters the kernel itself (rustix's raw system calls, a static binary): its
  // own frames are not a library's run to step over.
  const uint32_t start = frame("std::sys::thread::unix::Thread::new::thread_start", "rs");
  const uint32_t poller = frame("polling::epoll::Poller::wait", "rs");
  const uint32_t raw = frame("rustix::backend::event::syscalls::epoll_wait", "rs");
  profile.stacks.push_back({.frames = {start, poller, raw, kernel}, .samples = 50});
  const std::vector<BlockingCallSite> sites = TopBlockingCallSites(profile, 10, &modules);
  ASSERT_EQ(sites.size(), 4u);
  EXPECT_EQ(sites[0].name, "wait_for_work > pthread_cond_wait");
  EXPECT_EQ(sites[1].name,
            "tokio::runtime::park::Inner::park > std::sync::poison::condvar::Condvar::wait");
  EXPECT_EQ(sites[2].name, "pthread_cond_wait");
  EXPECT_EQ(sites[3].name,
            "polling::epoll::Poller::wait > rustix::backend::event::syscalls::epoll_wait");
  // Without the modules the run ends at the innermost frame (so the first and third stacks
  // meet), Rust's standard library still being told by its names.
  const std::vector<BlockingCallSite> bare = TopBlockingCallSites(profile, 10, nullptr);
  ASSERT_EQ(bare.size(), 3u);
  EXPECT_EQ(bare[0].name, "pthread_cond_wait > __futex_abstimed_wait_common");
  EXPECT_EQ(bare[0].count, 600u);
  EXPECT_EQ(bare[1].name,
            "tokio::runtime::park::Inner::park > std::sync::poison::condvar::Condvar::wait");
}

// A callback of the runtime's on the way (std::call_once runs its function under libc's
// __pthread_once_slow): the site is where the program called the standard library, not the
// runtime frame in between.
TEST(OffCpuTablesTest, ARuntimeCallbackOnTheWayIsSteppedOver) {
  ProfileWithModules p;
  symbolize::Profile& profile = p.profile;
  FrameModuleMap& modules = p.modules;
  auto frame = [&](const std::string& name, const std::string& module) {
    return p.Frame(name, module);
  };
  const std::vector<uint32_t> frames = {
      frame("main", "cppprog"), frame("std::future<int>::get", "cppprog"),
      frame("std::call_once<std::__future_base::_State_baseV2::_M_set_result>", "cppprog"),
      frame("__pthread_once_slow", "libc.so.6"), frame("std::thread::join", "libstdc++.so.6"),
      frame("__pthread_clockjoin_ex", "libc.so.6")};
  profile.stacks.push_back({.frames = frames, .samples = 520});
  // A stack of the libraries' frames alone is not walked to its root (clone3).
  const std::vector<uint32_t> library_only = {
      frame("clone3", "libc.so.6"), frame("start_thread", "libc.so.6"),
      frame("execute_native_thread_routine", "libstdc++.so.6"),
      frame("std::thread::_State_impl<std::function<void ()>>::_M_run", "libstdc++.so.6"),
      frame("__nanosleep", "libc.so.6")};
  profile.stacks.push_back({.frames = library_only, .samples = 10});
  const std::vector<BlockingCallSite> sites = TopBlockingCallSites(profile, 10, &modules);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].name, "main > std::future<int>::get");
  EXPECT_EQ(sites[1].name, "execute_native_thread_routine > "
                           "std::thread::_State_impl<std::function<void ()>>::_M_run");
}

// Under record --alloc the preload's malloc and free stand between the program and glibc's: a
// lock glibc's free waits for is the program's call to free (it was named "free > _int_free").
TEST(OffCpuTablesTest, TheAllocationPreloadIsARuntimeLibrary) {
  ProfileWithModules p;
  const std::vector<uint32_t> frames = {
      p.Frame("main", "app"), p.Frame("app::churn", "app"),
      p.Frame("core::ptr::drop_in_place<alloc::vec::Vec<u64>>", "app"),
      p.Frame("alloc::alloc::dealloc", "app"), p.Frame("free", "libnativeprof_alloc.so"),
      p.Frame("nativeprof::preload::(anonymous namespace)::Release", "libnativeprof_alloc.so"),
      p.Frame("_int_free", "libc.so.6"), p.Frame("__lll_lock_wait_private", "libc.so.6")};
  p.profile.stacks.push_back({.frames = frames, .samples = 700});
  const std::vector<BlockingCallSite> sites = TopBlockingCallSites(p.profile, 10, &p.modules);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].name, "app::churn > core::ptr::drop_in_place<alloc::vec::Vec<u64>>");
}

// A thread whose blocked interval had no switch sample is named by its pseudo-frame, not taken
// for a kernel thread; a stack with no frame at all still is.
TEST(OffCpuTablesTest, AnUnsampledIntervalIsNamedAsSuch) {
  symbolize::Profile profile;
  profile.frames.push_back({.function = symbolize::kNoSwitchStackFrame});
  profile.frames.push_back({.function = "schedule", .kind = symbolize::ProfileFrameKind::kKernel});
  profile.stacks.push_back({.thread_name = "worker", .frames = {0}, .samples = 300});
  profile.stacks.push_back({.thread_name = "kworker", .frames = {1}, .samples = 100});
  const std::vector<BlockingCallSite> sites = TopBlockingCallSites(profile, 10, nullptr);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].name, symbolize::kNoSwitchStackFrame);
  EXPECT_EQ(sites[0].count, 300u);
  EXPECT_EQ(sites[1].name, "[kernel thread or no user stack]");
}

TEST(OffCpuTablesTest, BlockingCallSitesAsTextAndMarkdown) {
  const std::vector<BlockingCallSite> sites = {{"serve > read", 750'000}, {"log > fsync", 250'000}};
  const std::string text = RenderBlockingCallSites(sites, 1'000'000);
  EXPECT_THAT(text, HasSubstr("Top 2 blocking call sites (of 1,000,000 us off-CPU)"));
  EXPECT_THAT(text, HasSubstr("  75.00%       750,000  serve > read"));
  const std::string md = RenderBlockingCallSites(sites, 1'000'000, TableFormat::kMarkdown);
  EXPECT_THAT(md, HasSubstr("**Top 2 blocking call sites** (of 1,000,000 us off-CPU)"));
  EXPECT_THAT(md, HasSubstr("|---:|---:|:---|\n| 75.00% | 750,000 | `serve > read` |\n"));
  EXPECT_THAT(md, Not(HasSubstr("  75.00%")));
  EXPECT_EQ(RenderBlockingCallSites({}, 0, TableFormat::kMarkdown), "");
}

}  // namespace
}  // namespace nativeprof::output
