#include "sampler/counter_set.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "sampler/counter_attach.h"
#include "sampler/counter_value.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

using ::testing::DoubleEq;
using ::testing::HasSubstr;

// A fake perf_event_open: per event name either an errno or the read_format values that read()
// will return (served from a pipe, so CounterSet::Read goes through its real read path).
struct FakeKernel {
  struct Reply {
    int err = 0;  // non-zero: fail with this errno
    uint64_t value = 0, enabled = 0, running = 0, id = 0;
    int fail_times = 1 << 30;  // with err: fail this many times, then succeed
  };
  std::map<uint64_t, Reply> by_config;  // keyed by type << 32 | config
  std::vector<perf_event_attr> attrs;   // every attr passed, in order
  std::set<pid_t> gone;                 // tasks that no longer exist (ESRCH)

  static uint64_t Key(uint32_t type, uint64_t config) {
    return (static_cast<uint64_t>(type) << 32) | config;
  }
  void Set(const char* event, Reply reply) {
    EventSpec spec = *ParseEventSpec(event);
    by_config[Key(spec.type, spec.config)] = reply;
  }

  PerfEventOpenFn Fn() {
    return [this](perf_event_attr* attr, pid_t pid, int, int, unsigned long) -> int {
      attrs.push_back(*attr);
      if (gone.count(pid) != 0) {
        errno = ESRCH;
        return -1;
      }
      Reply& r = by_config[Key(attr->type, attr->config)];
      if (r.err != 0 && r.fail_times > 0) {
        --r.fail_times;
        errno = r.err;
        return -1;
      }
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
      uint64_t words[4] = {r.value, r.enabled, r.running, r.id};
      size_t n = (attr->read_format & PERF_FORMAT_ID) ? 4 : 3;
      EXPECT_EQ(::write(fds[1], words, n * 8), static_cast<ssize_t>(n * 8));
      ::close(fds[1]);
      return fds[0];
    };
  }
};

TEST(CounterValueTest, NotMultiplexedValueIsRaw) {
  CounterValue v = MakeCounterValue(*ParseEventSpec("instructions"), 1000, 500, 500);
  EXPECT_TRUE(v.supported);
  EXPECT_TRUE(v.counted);
  EXPECT_THAT(v.scaled, DoubleEq(1000));
  EXPECT_THAT(v.RunningPercent(), DoubleEq(100));
}

TEST(CounterValueTest, MultiplexedValueIsScaledByEnabledOverRunning) {
  CounterValue v = MakeCounterValue(*ParseEventSpec("cycles"), 1000, 400, 100);
  EXPECT_TRUE(v.counted);
  EXPECT_THAT(v.scaled, DoubleEq(4000));
  EXPECT_THAT(v.RunningPercent(), DoubleEq(25));
}

TEST(CounterValueTest, NeverRunningIsNotCounted) {
  EXPECT_FALSE(MakeCounterValue(*ParseEventSpec("cycles"), 0, 400, 0).counted);
  EXPECT_FALSE(MakeCounterValue(*ParseEventSpec("cycles"), 0, 0, 0).counted);
}

TEST(CounterValueTest, ParseReadFormatChecksLength) {
  constexpr uint64_t kTimes = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  uint64_t words[4] = {7, 8, 9, 10};
  auto bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(words), sizeof(words));
  NP_ASSERT_OK_AND_ASSIGN(ReadFormatValues r, ParseReadFormat(bytes, kTimes | PERF_FORMAT_ID));
  EXPECT_EQ(r.value, 7u);
  EXPECT_EQ(r.time_enabled, 8u);
  EXPECT_EQ(r.time_running, 9u);
  EXPECT_EQ(r.id, 10u);
  EXPECT_EQ(ParseReadFormat(bytes.first(24), kTimes | PERF_FORMAT_ID).status().code(),
            absl::StatusCode::kDataLoss);
  NP_EXPECT_OK(ParseReadFormat(bytes.first(24), kTimes));
}

TEST(CounterValueTest, ParseReadFormatTakesOnlyTheFieldsAskedFor) {
  // A sampling event's read: its value, then the records it lost; no times, no id.
  uint64_t words[2] = {5, 42};
  auto bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(words), sizeof(words));
  NP_ASSERT_OK_AND_ASSIGN(ReadFormatValues r, ParseReadFormat(bytes, PERF_FORMAT_LOST));
  EXPECT_EQ(r.value, 5u);
  EXPECT_EQ(r.lost, 42u);
  EXPECT_EQ(r.time_enabled, 0u);
  EXPECT_EQ(r.id, 0u);
  EXPECT_EQ(ParseReadFormat(bytes, PERF_FORMAT_GROUP).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CounterSetTest, DefaultEventsArePerfStatDefaults) {
  std::vector<std::string> names;
  for (const EventSpec& e : DefaultCounterEvents()) names.push_back(e.name);
  EXPECT_THAT(names, ::testing::ElementsAre("task-clock", "context-switches", "cpu-migrations",
                                            "page-faults", "cycles", "instructions", "branches",
                                            "branch-misses", "cache-references",
                                            "cache-misses"));
}

TEST(CounterSetTest, OpensCountingAttrsWithInheritAndEnableOnExec) {
  FakeKernel kernel;
  kernel.Set("task-clock", {.value = 5, .enabled = 5, .running = 5});
  CounterOptions options;
  options.open_fn = kernel.Fn();
  NP_ASSERT_OK_AND_ASSIGN(CounterSet set,
                          CounterSet::Open(*ParseEventList("task-clock"), 1234, options));
  ASSERT_EQ(kernel.attrs.size(), 1u);
  const perf_event_attr& attr = kernel.attrs[0];
  EXPECT_EQ(attr.inherit, 1u);
  EXPECT_EQ(attr.enable_on_exec, 1u);
  EXPECT_EQ(attr.disabled, 1u);
  EXPECT_EQ(attr.sample_period, 0u);
  EXPECT_EQ(attr.read_format,
            static_cast<uint64_t>(PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING));
  EXPECT_EQ(set.pid(), 1234);
}

// The hardware path on a machine without a PMU: recorded read values for cycles/instructions
// (one multiplexed, one never scheduled) go through Open + Read + scaling.
TEST(CounterSetTest, ReadsAndScalesRecordedHardwareValues) {
  FakeKernel kernel;
  kernel.Set("cycles", {.value = 1'000'000, .enabled = 2'000'000, .running = 1'000'000});
  kernel.Set("instructions", {.value = 3'000'000, .enabled = 2'000'000, .running = 2'000'000});
  kernel.Set("branch-misses", {.value = 0, .enabled = 2'000'000, .running = 0});
  kernel.Set("cache-misses", {.err = ENOENT});
  CounterOptions options;
  options.open_fn = kernel.Fn();
  NP_ASSERT_OK_AND_ASSIGN(
      CounterSet set,
      CounterSet::Open(*ParseEventList("cycles,instructions,branch-misses,cache-misses"), 1,
                       options));
  NP_ASSERT_OK_AND_ASSIGN(std::vector<CounterValue> values, set.Read());
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(values[0].event.name, "cycles");
  EXPECT_TRUE(values[0].counted);
  EXPECT_EQ(values[0].raw, 1'000'000u);
  EXPECT_THAT(values[0].scaled, DoubleEq(2'000'000));
  EXPECT_THAT(values[0].RunningPercent(), DoubleEq(50));
  EXPECT_THAT(values[1].scaled, DoubleEq(3'000'000));
  EXPECT_TRUE(values[2].supported);
  EXPECT_FALSE(values[2].counted);  // "<not counted>", not 0
  EXPECT_FALSE(values[3].supported);
  EXPECT_THAT(values[3].unsupported_reason, HasSubstr("No such file"));
}

TEST(CounterSetTest, UnsupportedErrnosBecomeUnsupportedValues) {
  for (int err : {ENOENT, EOPNOTSUPP, ENODEV, EINVAL}) {
    FakeKernel kernel;
    kernel.Set("cycles", {.err = err});
    CounterOptions options;
    options.open_fn = kernel.Fn();
    NP_ASSERT_OK_AND_ASSIGN(CounterSet set,
                            CounterSet::Open(*ParseEventList("cycles"), 1, options));
    NP_ASSERT_OK_AND_ASSIGN(std::vector<CounterValue> values, set.Read());
    EXPECT_FALSE(values[0].supported) << err;
  }
}

TEST(CounterSetTest, PermissionRefusalRetriesUserOnlyThenSucceeds) {
  FakeKernel kernel;
  kernel.Set("task-clock", {.err = EACCES, .value = 9, .enabled = 1, .running = 1,
                            .fail_times = 1});
  CounterOptions options;
  options.open_fn = kernel.Fn();
  NP_ASSERT_OK_AND_ASSIGN(CounterSet set,
                          CounterSet::Open(*ParseEventList("task-clock"), 1, options));
  ASSERT_EQ(kernel.attrs.size(), 2u);
  EXPECT_EQ(kernel.attrs[0].exclude_kernel, 0u);
  EXPECT_EQ(kernel.attrs[1].exclude_kernel, 1u);
  NP_ASSERT_OK_AND_ASSIGN(std::vector<CounterValue> values, set.Read());
  EXPECT_EQ(values[0].raw, 9u);
}

TEST(CounterSetTest, PermissionRefusedEvenUserOnlyNamesParanoidSetting) {
  FakeKernel kernel;
  kernel.Set("page-faults", {.err = EPERM});
  CounterOptions options;
  options.open_fn = kernel.Fn();
  absl::StatusOr<CounterSet> set = CounterSet::Open(*ParseEventList("page-faults"), 1, options);
  ASSERT_EQ(set.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(set.status().message()),
              HasSubstr("/proc/sys/kernel/perf_event_paranoid is "));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("'page-faults'"));
}

TEST(CounterSetTest, MissingProcessIsUnavailable) {
  FakeKernel kernel;
  kernel.Set("task-clock", {.err = ESRCH});
  CounterOptions options;
  options.open_fn = kernel.Fn();
  absl::Status st = CounterSet::Open(*ParseEventList("task-clock"), 1, options).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(st.message()), HasSubstr("no process with PID 1"));
}

TEST(CounterSetTest, PermissionMessageShowsValueAndFix) {
  std::string msg = PerfPermissionMessage("cycles", EACCES, 3);
  EXPECT_THAT(msg, HasSubstr("perf_event_paranoid is 3"));
  EXPECT_THAT(msg, HasSubstr("sysctl -w kernel.perf_event_paranoid=1"));
  EXPECT_THAT(msg, HasSubstr("Permission denied"));
  EXPECT_THAT(PerfPermissionMessage("cycles", EPERM, std::nullopt), HasSubstr("unreadable"));
}

TEST(CounterSetTest, CountsOwnThreadWithRealKernel) {
  NP_SKIP_IF_NO_PERF();
  CounterOptions options;
  options.enable_on_exec = false;
  options.inherit = false;
  NP_ASSERT_OK_AND_ASSIGN(
      CounterSet set, CounterSet::Open(*ParseEventList("task-clock,page-faults,cycles"), 0,
                                       options));
  // Touch 64 fresh pages (a new mapping: heap memory may already be faulted in) and burn CPU.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* fresh = ::mmap(nullptr, 64 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
  ASSERT_NE(fresh, MAP_FAILED);
  for (size_t i = 0; i < 64; ++i) static_cast<volatile char*>(fresh)[i * page] = 1;
  ::munmap(fresh, 64 * page);
  volatile uint64_t x = 0;
  for (int i = 0; i < 2'000'000; ++i) x = x + i;
  NP_ASSERT_OK(set.Disable());
  NP_ASSERT_OK_AND_ASSIGN(std::vector<CounterValue> values, set.Read());
  EXPECT_TRUE(values[0].counted);
  EXPECT_GT(values[0].raw, 0u);
  EXPECT_GE(values[1].raw, 60u);
  // cycles: a PMU may or may not exist; either way it must not pretend to be a counted 0.
  if (values[2].supported && values[2].counted) {
    EXPECT_GT(values[2].raw, 0u);
  }
}

// Per-thread mode on this process: events per CPU, a thread started after Open() gets its own
// row with its name and its CPU time, summed over the CPUs' copies.
TEST(CounterSetTest, PerThreadRowForThreadStartedAfterOpen) {
  NP_SKIP_IF_NO_PERF();
  CounterOptions options;
  options.enable_on_exec = false;
  options.per_thread = true;
  NP_ASSERT_OK_AND_ASSIGN(CounterSet set,
                          CounterSet::Open(*ParseEventList("task-clock,page-faults"), 0, options));
  pid_t worker_tid = 0;
  std::thread worker([&worker_tid] {
    worker_tid = static_cast<pid_t>(::gettid());
    pthread_setname_np(pthread_self(), "np-counted");
    volatile uint64_t x = 0;
    for (int i = 0; i < 20'000'000; ++i) x = x + i;
  });
  worker.join();
  set.Poll();
  NP_ASSERT_OK_AND_ASSIGN(std::vector<ThreadCounters> rows, set.ReadPerThread());
  NP_ASSERT_OK(set.Disable());
  const ThreadCounters* row = nullptr;
  for (const ThreadCounters& r : rows) {
    if (r.tid == worker_tid) row = &r;
  }
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->comm, "np-counted");
  ASSERT_TRUE(row->values[0].counted);
  EXPECT_GT(row->values[0].raw, 1'000'000u);  // ns of task-clock: the loop takes several ms
  EXPECT_LE(row->values[0].time_running, row->values[0].time_enabled);
  EXPECT_EQ(set.incomplete_tasks(), 0u);
}

// Several tasks in one set (`stat -p` on a multi-threaded process): values and times add up over
// the tasks, and a task that exited since it was listed is skipped.
TEST(CounterSetTest, SeveralTasksAddUpAndVanishedOnesAreSkipped) {
  FakeKernel kernel;
  kernel.Set("task-clock", {.value = 10, .enabled = 12, .running = 12});
  kernel.gone = {31};
  CounterOptions options;
  options.open_fn = kernel.Fn();
  NP_ASSERT_OK_AND_ASSIGN(CounterSet set,
                          CounterSet::Open(*ParseEventList("task-clock"), {30, 31, 32}, options));
  EXPECT_THAT(set.tids(), ::testing::ElementsAre(30, 32));
  NP_ASSERT_OK_AND_ASSIGN(std::vector<CounterValue> values, set.Read());
  EXPECT_EQ(values[0].raw, 20u);
  EXPECT_EQ(values[0].time_enabled, 24u);
  EXPECT_EQ(values[0].time_running, 24u);
  // The first task vanishing means the target is gone.
  kernel.gone = {30};
  EXPECT_EQ(CounterSet::Open(*ParseEventList("task-clock"), {30, 32}, options).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(CounterAttachTest, MissingProcessIsNotFound) {
  // pid_max is at most 2^22, so this pid cannot exist.
  EXPECT_EQ(AttachedCounters::Open(*ParseEventList("task-clock"), 1 << 23, false)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace nativeprof::sampler
