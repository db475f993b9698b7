// libnativeprof in-process: the C API's states and errors, 1,000 start/stop cycles without fd,
// thread or memory growth, a region profile that names the function a thread burned CPU in (for
// a thread started before and one started after Start), the reader thread staying out of the
// profile, counters, the writers (format by file name, counter table), and the C++ wrappers.
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "nativeprof/nativeprof.h"
#include "nativeprof/profiler.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::ReadFileOrEmpty;

size_t CountEntries(const char* dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

int64_t RssKb() {
  std::string status = ReadFileOrEmpty("/proc/self/status");
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::StartsWith(line, "VmRSS:")) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
      int64_t kb = 0;
      if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kb)) return kb;
    }
  }
  return -1;
}

std::atomic<uint64_t> g_sink{0};

// Two functions with distinct names that only burn CPU until `stop`.
__attribute__((noinline)) void BurnBeforeStartThread(const std::atomic<bool>* stop) {
  uint64_t x = 1;
  while (!stop->load(std::memory_order_relaxed)) {
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
  }
  g_sink += x;
}

__attribute__((noinline)) void BurnAfterStartThread(const std::atomic<bool>* stop) {
  uint64_t x = 3;
  while (!stop->load(std::memory_order_relaxed)) {
    for (int i = 0; i < 10000; ++i) x = x * 2862933555777941757ull + 3037000493ull;
    asm volatile("" : "+r"(x));
  }
  g_sink += x;
}

np_profiler* MustCreate(const np_options* options) {
  np_profiler* p = nullptr;
  np_status s = np_profiler_create(options, &p);
  EXPECT_EQ(s, NP_OK) << np_last_error();
  return p;
}

TEST(LibraryCApiTest, RejectsBadArgumentsWithMessages) {
  EXPECT_EQ(np_profiler_create(nullptr, nullptr), NP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(np_last_error()), "");

  np_options o;
  np_options_init(&o);
  o.event = "no-such-event";
  np_profiler* p = nullptr;
  EXPECT_EQ(np_profiler_create(&o, &p), NP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  EXPECT_THAT(np_last_error(), ::testing::HasSubstr("no-such-event"));

  np_options_init(&o);
  o.sample = 0;
  o.count = 0;
  EXPECT_EQ(np_profiler_create(&o, &p), NP_ERROR_INVALID_ARGUMENT);

  np_options_init(&o);
  o.struct_size = 3;
  EXPECT_EQ(np_profiler_create(&o, &p), NP_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(np_last_error(), ::testing::HasSubstr("np_options_init"));

  EXPECT_EQ(np_profiler_start(nullptr), NP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(np_status_name(NP_ERROR_BAD_STATE), "NP_ERROR_BAD_STATE");
  np_profiler_destroy(nullptr);  // ignored
}

TEST(LibraryCApiTest, EnforcesStartStopStates) {
  NP_SKIP_IF_NO_PERF();
  np_profiler* p = MustCreate(nullptr);
  ASSERT_NE(p, nullptr);
  const std::string dir = MakeTempDir();
  EXPECT_EQ(np_profiler_stop(p), NP_ERROR_BAD_STATE);
  ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
  EXPECT_EQ(np_profiler_start(p), NP_ERROR_BAD_STATE);
  EXPECT_THAT(np_last_error(), ::testing::HasSubstr("already running"));
  EXPECT_EQ(np_profiler_write_folded(p, (dir + "/x.folded").c_str()), NP_ERROR_BAD_STATE);
  size_t count = 0;
  EXPECT_EQ(np_profiler_counters(p, nullptr, 0, &count), NP_ERROR_BAD_STATE);
  EXPECT_EQ(np_profiler_reset(p), NP_ERROR_BAD_STATE);
  ASSERT_EQ(np_profiler_stop(p), NP_OK) << np_last_error();
  EXPECT_EQ(np_profiler_write_folded(p, "/nonexistent-dir/x.folded"), NP_ERROR_IO);
  // A directory where the file goes, and a parent that is a file: the file's fault too (errno's
  // class for EISDIR and ENOTDIR made these NP_ERROR_BAD_STATE).
  EXPECT_EQ(np_profiler_write_folded(p, dir.c_str()), NP_ERROR_IO);
  EXPECT_THAT(np_last_error(), ::testing::HasSubstr("Is a directory"));
  EXPECT_EQ(np_profiler_write(p, (dir + "/x.folded/y.svg").c_str()), NP_ERROR_IO);
  EXPECT_EQ(np_profiler_write_folded(p, (dir + "/x.folded").c_str()), NP_OK) << np_last_error();
  EXPECT_EQ(np_profiler_write(p, (dir + "/x.folded/y.svg").c_str()), NP_ERROR_IO);
  EXPECT_THAT(np_last_error(), ::testing::HasSubstr("Not a directory"));
  // Destroying a running profiler stops it.
  ASSERT_EQ(np_profiler_start(p), NP_OK);
  np_profiler_destroy(p);
}

// A hardware sampling event this machine lacks falls back to cpu-clock, as `record` does, and
// says so in one line on stderr, once however often a profiler starts (a benchmark harness
// starts one per benchmark). It was silent: NP_OK everywhere and cpu-clock samples.
TEST(LibraryCApiTest, AHardwareEventFallbackIsSaidOnce) {
  NP_SKIP_IF_NO_PERF();
  np_options o;
  np_options_init(&o);
  o.event = "cycles";
  o.count = 0;
  np_profiler* p = MustCreate(&o);
  ASSERT_NE(p, nullptr);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
    ASSERT_EQ(np_profiler_stop(p), NP_OK) << np_last_error();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  np_profiler_destroy(p);
  if (testing::PerfEventOpens(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES)) {
    EXPECT_THAT(err, ::testing::Not(::testing::HasSubstr("cycles is not supported"))) << err;
  } else {
    const std::vector<std::string> lines = absl::StrSplit(err, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), 1u) << err;
    EXPECT_EQ(lines[0], "nativeprof: cycles is not supported on this machine (no PMU access); "
                        "sampling cpu-clock instead");
  }
}

TEST(LibraryCApiTest, OneRunningProfilerPerProcess) {
  NP_SKIP_IF_NO_PERF();
  np_profiler* a = MustCreate(nullptr);
  np_profiler* b = MustCreate(nullptr);
  ASSERT_EQ(np_profiler_start(a), NP_OK) << np_last_error();
  EXPECT_EQ(np_profiler_start(b), NP_ERROR_BAD_STATE);
  EXPECT_THAT(np_last_error(), ::testing::HasSubstr("another nativeprof profiler"));
  ASSERT_EQ(np_profiler_stop(a), NP_OK);
  EXPECT_EQ(np_profiler_start(b), NP_OK) << np_last_error();
  EXPECT_EQ(np_profiler_stop(b), NP_OK);
  np_profiler_destroy(a);
  np_profiler_destroy(b);
}

TEST(LibraryCApiTest, DwarfUnwindingNamesTheBurningFunction) {
  NP_SKIP_IF_NO_PERF();
  np_options o;
  np_options_init(&o);
  o.dwarf = 1;
  o.count = 0;
  np_profiler* p = MustCreate(&o);
  ASSERT_NE(p, nullptr);
  std::atomic<bool> stop{false};
  ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
  std::thread t(BurnAfterStartThread, &stop);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  stop = true;
  t.join();
  ASSERT_EQ(np_profiler_stop(p), NP_OK) << np_last_error();
  const std::string path = MakeTempDir() + "/dwarf.folded";
  ASSERT_EQ(np_profiler_write_folded(p, path.c_str()), NP_OK) << np_last_error();
  const std::string folded = ReadFileOrEmpty(path);
  EXPECT_THAT(folded, ::testing::HasSubstr("BurnAfterStartThread"));
  np_profiler_destroy(p);
}

// Writes after each segment show what was collected until then: samples accumulate across
// start/stop pairs and are dropped by reset, however many files a segment was written to.
TEST(LibraryCApiTest, EveryWriteShowsTheSegmentsSinceTheLastReset) {
  NP_SKIP_IF_NO_PERF();
  np_options o;
  np_options_init(&o);
  o.dwarf = 1;
  o.count = 0;
  np_profiler* p = MustCreate(&o);
  ASSERT_NE(p, nullptr);
  const std::string dir = MakeTempDir();
  auto segment = [&](void (*burn)(const std::atomic<bool>*)) {
    std::atomic<bool> stop{false};
    ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
    std::thread t(burn, &stop);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
    t.join();
    ASSERT_EQ(np_profiler_stop(p), NP_OK) << np_last_error();
  };
  auto write = [&](const std::string& name) {
    const std::string path = dir + "/" + name;
    EXPECT_EQ(np_profiler_write(p, path.c_str()), NP_OK) << np_last_error();
    return ReadFileOrEmpty(path);
  };
  segment(BurnBeforeStartThread);
  const std::string first = write("first.folded");
  EXPECT_THAT(first, ::testing::HasSubstr("BurnBeforeStartThread"));
  EXPECT_THAT(first, ::testing::Not(::testing::HasSubstr("BurnAfterStartThread")));
  EXPECT_EQ(write("first-again.folded"), first);
  EXPECT_THAT(write("first.svg"), ::testing::HasSubstr("BurnBeforeStartThread"));

  segment(BurnAfterStartThread);
  const std::string both = write("both.folded");
  EXPECT_THAT(both, ::testing::HasSubstr("BurnBeforeStartThread"));
  EXPECT_THAT(both, ::testing::HasSubstr("BurnAfterStartThread"));

  ASSERT_EQ(np_profiler_reset(p), NP_OK);
  const std::string after_reset = write("reset.folded");
  EXPECT_THAT(after_reset, ::testing::Not(::testing::HasSubstr("Burn")));
  np_profiler_destroy(p);
}

// np_profiler_write picks the format from the name as `record -o` does; np_profiler_write_counters
// writes record's counter table, where an event this machine cannot count says so instead of 0.
TEST(LibraryCApiTest, WritesFlameGraphPprofAndCounterTable) {
  NP_SKIP_IF_NO_PERF();
  np_profiler* p = MustCreate(nullptr);
  ASSERT_NE(p, nullptr);
  const std::string dir = MakeTempDir();
  std::atomic<bool> stop{false};
  ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
  EXPECT_EQ(np_profiler_write(p, (dir + "/x.svg").c_str()), NP_ERROR_BAD_STATE);
  EXPECT_EQ(np_profiler_write_counters(p, (dir + "/c.txt").c_str()), NP_ERROR_BAD_STATE);
  std::thread t(BurnAfterStartThread, &stop);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  stop = true;
  t.join();
  ASSERT_EQ(np_profiler_stop(p), NP_OK) << np_last_error();

  ASSERT_EQ(np_profiler_write(p, (dir + "/p.svg").c_str()), NP_OK) << np_last_error();
  const std::string svg = ReadFileOrEmpty(dir + "/p.svg");
  EXPECT_TRUE(absl::StartsWith(svg, "<?xml") || absl::StartsWith(svg, "<svg")) << svg.substr(0, 80);
  EXPECT_THAT(svg, ::testing::HasSubstr("<svg"));
  EXPECT_THAT(svg, ::testing::HasSubstr("BurnAfterStartThread"));
  ASSERT_EQ(np_profiler_write(p, (dir + "/p.pb.gz").c_str()), NP_OK) << np_last_error();
  const std::string gz = ReadFileOrEmpty(dir + "/p.pb.gz");
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  ASSERT_EQ(np_profiler_write(p, (dir + "/p.folded").c_str()), NP_OK) << np_last_error();
  EXPECT_THAT(ReadFileOrEmpty(dir + "/p.folded"), ::testing::HasSubstr("BurnAfterStartThread"));
  EXPECT_EQ(np_profiler_write(p, "/nonexistent-dir/p.svg"), NP_ERROR_IO);
  EXPECT_EQ(np_profiler_write(p, nullptr), NP_ERROR_INVALID_ARGUMENT);

  ASSERT_EQ(np_profiler_write_counters(p, (dir + "/c.txt").c_str()), NP_OK) << np_last_error();
  const std::string table = ReadFileOrEmpty(dir + "/c.txt");
  EXPECT_THAT(table, ::testing::HasSubstr("task-clock"));
  EXPECT_THAT(table, ::testing::HasSubstr("page-faults"));
  // Whatever np_profiler_counters calls unsupported, the table says so rather than printing 0.
  size_t count = 0;
  ASSERT_EQ(np_profiler_counters(p, nullptr, 0, &count), NP_OK);
  std::vector<np_counter> c(count);
  ASSERT_EQ(np_profiler_counters(p, c.data(), c.size(), &count), NP_OK);
  for (const np_counter& x : c) {
    if (x.supported) continue;
    bool row_says_so = false;
    for (absl::string_view line : absl::StrSplit(table, '\n')) {
      if (absl::StrContains(line, x.name) && absl::StrContains(line, "not supported")) {
        row_says_so = true;
      }
    }
    EXPECT_TRUE(row_says_so) << x.name << " in\n" << table;
  }
  EXPECT_EQ(np_profiler_write_counters(p, "/nonexistent-dir/c.txt"), NP_ERROR_IO);
  np_profiler_destroy(p);

  // Counting off: no table; sampling off: no profile.
  np_options o;
  np_options_init(&o);
  o.count = 0;
  p = MustCreate(&o);
  EXPECT_EQ(np_profiler_write_counters(p, (dir + "/c2.txt").c_str()), NP_ERROR_BAD_STATE);
  np_profiler_destroy(p);
  np_options_init(&o);
  o.sample = 0;
  p = MustCreate(&o);
  EXPECT_EQ(np_profiler_write(p, (dir + "/p2.svg").c_str()), NP_ERROR_BAD_STATE);
  np_profiler_destroy(p);
}

TEST(LibraryCApiTest, ThousandStartStopCyclesLeakNothing) {
  NP_SKIP_IF_NO_PERF();
  const size_t fds_before_create = CountEntries("/proc/self/fd");
  const size_t tasks_before_create = CountEntries("/proc/self/task");
  np_profiler* p = MustCreate(nullptr);
  ASSERT_NE(p, nullptr);
  // Warm up (first-use allocations: symbol caches, the logger, the synthesized maps).
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
    ASSERT_EQ(np_profiler_stop(p), NP_OK) << np_last_error();
  }
  const size_t fds = CountEntries("/proc/self/fd");
  const size_t tasks = CountEntries("/proc/self/task");
  const int64_t rss = RssKb();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(np_profiler_start(p), NP_OK) << "cycle " << i << ": " << np_last_error();
    ASSERT_EQ(np_profiler_stop(p), NP_OK) << "cycle " << i << ": " << np_last_error();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(CountEntries("/proc/self/fd"), fds);
  EXPECT_EQ(CountEntries("/proc/self/task"), tasks);
  // Counter totals and a handful of samples are all that may grow; 8 MB is far above that and
  // far below what 1,000 leaked rings (>= 33 pages each) would cost.
  const int64_t rss_growth_kb = RssKb() - rss;
  EXPECT_LT(rss_growth_kb, 8 * 1024);
  np_profiler_destroy(p);
  EXPECT_EQ(CountEntries("/proc/self/fd"), fds_before_create);
  EXPECT_EQ(CountEntries("/proc/self/task"), tasks_before_create);
  std::printf("1000 start/stop cycles: %.3f s (%.1f us per cycle), RSS %+lld kB\n", seconds,
              seconds * 1e3, static_cast<long long>(rss_growth_kb));
}

TEST(LibraryCApiTest, RegionProfileNamesTheBurningFunctionsOfEveryThread) {
  NP_SKIP_IF_NO_PERF();
  np_profiler* p = MustCreate(nullptr);
  ASSERT_NE(p, nullptr);
  std::atomic<bool> stop{false};
  std::thread before(BurnBeforeStartThread, &stop);
  ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
  std::thread after(BurnAfterStartThread, &stop);  // followed through inherit
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  stop = true;
  after.join();
  ASSERT_EQ(np_profiler_stop(p), NP_OK) << np_last_error();
  before.join();

  uint64_t samples = 0, lost = 0;
  ASSERT_EQ(np_profiler_samples(p, &samples, &lost), NP_OK);
  EXPECT_GT(samples, 100u);  // ~2 x 600 at 999 Hz, on a busy 2-core machine maybe far fewer
  const std::string path = MakeTempDir() + "/region.folded";
  ASSERT_EQ(np_profiler_write_folded(p, path.c_str()), NP_OK) << np_last_error();
  const std::string folded = ReadFileOrEmpty(path);
  EXPECT_THAT(folded, ::testing::HasSubstr("BurnBeforeStartThread"));
  EXPECT_THAT(folded, ::testing::HasSubstr("BurnAfterStartThread"));
  // The reader thread is never sampled.
  EXPECT_THAT(folded, ::testing::Not(::testing::HasSubstr("nativeprof-rd")));
  EXPECT_THAT(folded, ::testing::Not(::testing::HasSubstr("ReaderLoop")));

  // Reset forgets everything.
  ASSERT_EQ(np_profiler_reset(p), NP_OK);
  ASSERT_EQ(np_profiler_samples(p, &samples, &lost), NP_OK);
  EXPECT_EQ(samples, 0u);
  np_profiler_destroy(p);
}

TEST(LibraryCApiTest, InstallsNoSignalHandlers) {
  NP_SKIP_IF_NO_PERF();
  std::vector<struct sigaction> before(NSIG);
  for (int s = 1; s < NSIG; ++s) sigaction(s, nullptr, &before[s]);
  np_profiler* p = MustCreate(nullptr);
  ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction now;
    sigaction(s, nullptr, &now);
    EXPECT_EQ(now.sa_handler, before[s].sa_handler) << "signal " << s;
  }
  ASSERT_EQ(np_profiler_stop(p), NP_OK);
  np_profiler_destroy(p);
}

TEST(LibraryCApiTest, CountsPageFaultsAndContextSwitchesOfTheRegion) {
  NP_SKIP_IF_NO_PERF();
  np_options o;
  np_options_init(&o);
  o.sample = 0;
  np_profiler* p = MustCreate(&o);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(np_profiler_start(p), NP_OK) << np_last_error();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = 2000;
  void* mem =
      mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  for (size_t i = 0; i < pages; ++i) static_cast<volatile char*>(mem)[i * page] = 1;
  for (int i = 0; i < 20; ++i) usleep(1000);
  ASSERT_EQ(np_profiler_stop(p), NP_OK);
  munmap(mem, pages * page);

  size_t count = 0;
  ASSERT_EQ(np_profiler_counters(p, nullptr, 0, &count), NP_OK) << np_last_error();
  ASSERT_EQ(count, 8u);
  std::vector<np_counter> c(count);
  ASSERT_EQ(np_profiler_counters(p, c.data(), c.size(), &count), NP_OK);
  bool saw_faults = false, saw_switches = false;
  for (const np_counter& x : c) {
    if (std::strcmp(x.name, "page-faults") == 0) {
      saw_faults = true;
      EXPECT_TRUE(x.supported);
      EXPECT_GE(x.value, static_cast<double>(pages));
    }
    if (std::strcmp(x.name, "context-switches") == 0) {
      saw_switches = true;
      EXPECT_TRUE(x.supported);
      EXPECT_GE(x.value, 20.0);
    }
  }
  EXPECT_TRUE(saw_faults && saw_switches);
  // Sampling is off: there is nothing to write.
  EXPECT_EQ(np_profiler_write_folded(p, "/tmp/never.folded"), NP_ERROR_BAD_STATE);
  np_profiler_destroy(p);
}

TEST(LibraryCppApiTest, ScopedProfileWritesTheRegion) {
  NP_SKIP_IF_NO_PERF();
  NP_ASSERT_OK_AND_ASSIGN(Profiler profiler, Profiler::Create());
  const std::string path = MakeTempDir() + "/scoped.folded";
  std::atomic<bool> stop{false};
  {
    ScopedProfile scope(profiler, path);
    NP_ASSERT_OK(scope.status());
    std::thread t(BurnAfterStartThread, &stop);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
    t.join();
  }
  EXPECT_THAT(ReadFileOrEmpty(path), ::testing::HasSubstr("BurnAfterStartThread"));
  const std::string dir = MakeTempDir();
  NP_EXPECT_OK(profiler.Write(dir + "/scoped.svg"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/scoped.svg"), ::testing::HasSubstr("BurnAfterStartThread"));
  NP_EXPECT_OK(profiler.WriteCounters(dir + "/counters.txt"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/counters.txt"), ::testing::HasSubstr("task-clock"));
  NP_ASSERT_OK_AND_ASSIGN(CounterSnapshot counters, profiler.Counters());
  EXPECT_TRUE(counters.PageFaults().has_value());
  // Unsupported inputs give no value rather than 0.
  if (!counters.Get("cycles").has_value()) {
    EXPECT_FALSE(counters.Ipc().has_value());
  }
  EXPECT_TRUE(absl::IsFailedPrecondition(profiler.Stop()));

  Profiler moved = std::move(profiler);
  NP_EXPECT_OK(moved.Start());
  NP_EXPECT_OK(moved.Stop());
  absl::StatusOr<Profiler> bad = Profiler::Create({.event = "bogus"});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
}

}  // namespace
}  // namespace nativeprof
