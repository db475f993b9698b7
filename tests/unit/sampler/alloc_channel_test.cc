#include "sampler/alloc_channel.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// The preload extrapolates record times from the TSC where CLOCK_MONOTONIC runs at the TSC's
// rate: a "tsc" clocksource, or kvm-clock over an invariant TSC (a VM booted with tsc=unstable,
// where reading kvm-clock for every record was a quarter of the target's time under --alloc=1).
TEST(AllocChannelTest, RecordClockUsesTheTscOnlyWhereMonotonicFollowsIt) {
  constexpr char kInvariant[] =
      "processor\t: 0\nflags\t\t: fpu tsc msr constant_tsc rep_good nopl nonstop_tsc cpuid\n";
  constexpr char kVariable[] = "processor\t: 0\nflags\t\t: fpu tsc msr rep_good nopl cpuid\n";
  constexpr char kNotStopped[] = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc cpuid\n";
  EXPECT_TRUE(RecordClockMayUseTsc("tsc\n", kVariable));
  EXPECT_TRUE(RecordClockMayUseTsc("kvm-clock\n", kInvariant));
  EXPECT_FALSE(RecordClockMayUseTsc("kvm-clock\n", kVariable));
  EXPECT_FALSE(RecordClockMayUseTsc("kvm-clock\n", kNotStopped));
  EXPECT_FALSE(RecordClockMayUseTsc("kvm-clock\n", ""));
  EXPECT_FALSE(RecordClockMayUseTsc("hpet\n", kInvariant));
  EXPECT_FALSE(RecordClockMayUseTsc("acpi_pm", kInvariant));
  EXPECT_FALSE(RecordClockMayUseTsc("", kInvariant));
}

TEST(AllocChannelTest, CreatesConfiguresAndRemovesItsFiles) {
  const std::string dir = testing::MakeTempDir();
  std::string path;
  {
    absl::StatusOr<AllocChannel> ch = AllocChannel::Create(dir, 4096, 1 << 16);
    ASSERT_TRUE(ch.ok()) << ch.status();
    path = ch->path();
    EXPECT_TRUE(Exists(path));
    EXPECT_TRUE(Exists(path + ".wake"));
    EXPECT_EQ(ch->rate_bytes(), 4096u);
    perf_event_attr attr{};
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_IDENTIFIER;
    attr.sample_stack_user = 8192;
    ch->Configure(attr);
    // Nothing counted, nothing in the ring, and the wake FIFO is quiet.
    const AllocTotals t = ch->Totals();
    EXPECT_EQ(t.alloc_calls, 0u);
    EXPECT_EQ(t.processes, 0u);
    RingBuffer ring = ch->Ring();
    EXPECT_EQ(ring.Drain([](std::span<const uint8_t>) {}).records, 0u);
    char byte;
    EXPECT_LT(::read(ch->wake_fd(), &byte, 1), 1);
    ch->AfterDrain();
    EXPECT_EQ(ch->live_over_time().size(), 1u);
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".wake"));
}

// A name that is taken is refused, and the file there, not this call's, is left alone.
TEST(AllocChannelTest, ExistingFileIsNeitherReusedNorRemoved) {
  const std::string dir = testing::MakeTempDir();
  std::vector<std::string> taken;
  for (int i = 0; i < 64; ++i) {
    taken.push_back(dir + "/nativeprof-alloc-" + std::to_string(::getpid()) + "-" +
                    std::to_string(i));
    FILE* f = std::fopen(taken.back().c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  absl::StatusOr<AllocChannel> ch = AllocChannel::Create(dir, 1, 1 << 16);
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.status().message().find("cannot create"), absl::string_view::npos);
  for (const std::string& path : taken) EXPECT_TRUE(Exists(path)) << path;
}

// The files of a profiler that was killed (its pid exists no more) are removed by the next one;
// those of a live pid, and other names, are not.
TEST(AllocChannelTest, ChannelsOfProfilersThatAreGoneAreRemoved) {
  const std::string dir = testing::MakeTempDir();
  const std::string dead = std::to_string(testing::ReapedPid());
  const std::string live = std::to_string(::getppid());
  const std::vector<std::string> stale = {"nativeprof-alloc-" + dead + "-0",
                                          "nativeprof-alloc-" + dead + "-0.wake"};
  const std::vector<std::string> kept = {"nativeprof-alloc-" + live + "-3",
                                         "nativeprof-alloc-" + live + "-3.wake",
                                         "nativeprof-alloc-x-1", "other-" + dead + "-0"};
  for (const std::vector<std::string>* names : {&stale, &kept}) {
    for (const std::string& name : *names) {
      FILE* f = std::fopen((dir + "/" + name).c_str(), "w");
      ASSERT_NE(f, nullptr);
      std::fclose(f);
    }
  }
  absl::StatusOr<AllocChannel> ch = AllocChannel::Create(dir, 1, 1 << 16);
  ASSERT_TRUE(ch.ok()) << ch.status();
  for (const std::string& name : stale) EXPECT_FALSE(Exists(dir + "/" + name)) << name;
  for (const std::string& name : kept) EXPECT_TRUE(Exists(dir + "/" + name)) << name;
  EXPECT_TRUE(Exists(ch->path()));
}

// What the preload sees of a thread's stack hint: it maps the file and probes as the layout says.
uint64_t HintSeenByPreload(const std::string& path, uint32_t tid) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return ~uint64_t{0};
  void* base = ::mmap(nullptr, sizeof(alloc_channel::Control), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) return ~uint64_t{0};
  const auto* c = static_cast<const alloc_channel::Control*>(base);
  uint64_t high = 0;
  for (size_t probe = 0; probe < alloc_channel::kHintProbes; ++probe) {
    const alloc_channel::StackHint& h = c->hints[alloc_channel::HintSlot(tid, probe)];
    const uint32_t owner = h.tid.load(std::memory_order_acquire);
    if (owner == tid) high = h.stack_high.load(std::memory_order_relaxed);
    if (owner == tid || owner == 0) break;
  }
  ::munmap(base, sizeof(alloc_channel::Control));
  return high;
}

// Each process's heap, as the preloads of two processes and an exec'd one would leave it.
TEST(AllocChannelTest, ProcessHeapsAreListedLargestPeakFirst) {
  absl::StatusOr<AllocChannel> ch = AllocChannel::Create(testing::MakeTempDir(), 1, 1 << 16);
  ASSERT_TRUE(ch.ok()) << ch.status();
  EXPECT_TRUE(ch->ProcessHeaps().empty());
  const int fd = ::open(ch->path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  void* base = ::mmap(nullptr, sizeof(alloc_channel::Control), PROT_READ | PROT_WRITE,
                      MAP_SHARED, fd, 0);
  ::close(fd);
  ASSERT_NE(base, MAP_FAILED);
  auto* c = static_cast<alloc_channel::Control*>(base);
  c->pids[7].store(300);
  c->pid_peak[7].store(4096);
  c->pid_live[7].store(-512);  // freed what it inherited from its parent
  c->pids[4000].store(200);
  c->pid_peak[4000].store(1 << 20);
  c->pid_live[4000].store(100);
  c->pids[9].store(100);  // attached, never published a change
  const std::vector<ProcessHeap> heaps = ch->ProcessHeaps();
  ASSERT_EQ(heaps.size(), 3u);
  EXPECT_EQ(heaps[0].pid, 200u);
  EXPECT_EQ(heaps[0].peak_bytes, uint64_t{1} << 20);
  EXPECT_EQ(heaps[0].live_bytes, 100);
  EXPECT_EQ(heaps[1].pid, 300u);
  EXPECT_EQ(heaps[1].live_bytes, -512);
  EXPECT_EQ(heaps[2].pid, 100u);
  EXPECT_EQ(heaps[2].peak_bytes, 0u);
  ::munmap(base, sizeof(alloc_channel::Control));
}

TEST(AllocChannelTest, StackHintsAreSetUpdatedAndForgotten) {
  absl::StatusOr<AllocChannel> ch = AllocChannel::Create(testing::MakeTempDir(), 1, 1 << 16);
  ASSERT_TRUE(ch.ok()) << ch.status();
  EXPECT_EQ(HintSeenByPreload(ch->path(), 4242), 0u);
  ch->SetStackHint(4242, 0x7ffc0000f000);
  ch->SetStackHint(77, 0x7ffc00010000);
  EXPECT_EQ(HintSeenByPreload(ch->path(), 4242), 0x7ffc0000f000u);
  EXPECT_EQ(HintSeenByPreload(ch->path(), 77), 0x7ffc00010000u);
  ch->SetStackHint(4242, 0x7ffc0000e000);  // a new image of the tid: the latest unwind wins
  EXPECT_EQ(HintSeenByPreload(ch->path(), 4242), 0x7ffc0000e000u);
  ch->SetStackHint(4242, 0);  // a truncated unwind: copy everything again
  EXPECT_EQ(HintSeenByPreload(ch->path(), 4242), 0u);
  EXPECT_EQ(HintSeenByPreload(ch->path(), 77), 0x7ffc00010000u);
  ch->SetStackHint(0, 0x1000);  // no thread has tid 0: ignored, the free mark stays free
  EXPECT_EQ(HintSeenByPreload(ch->path(), 0), 0u);
}

TEST(AllocChannelTest, RefusesARingThatIsNotAPowerOfTwo) {
  EXPECT_FALSE(AllocChannel::Create(testing::MakeTempDir(), 1, 3000).ok());
}

TEST(AllocChannelTest, MissingDirectoryIsAnError) {
  absl::StatusOr<AllocChannel> ch = AllocChannel::Create("/nonexistent/dir", 1, 1 << 16);
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.status().message().find("/nonexistent/dir"), absl::string_view::npos);
}

}  // namespace
}  // namespace nativeprof::sampler
