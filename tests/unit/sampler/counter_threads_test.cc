#include "sampler/counter_threads.h"

#include <linux/memfd.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/scoped_fd.h"
#include "sampler/record_sorter.h"
#include "sampler/ring_buffer.h"
#include "tests/testing/record_builder.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

// Byte-exact builders for the side-band records the kernel writes: body, then the sample_id
// trailer {pid, tid, time} that sample_id_all with PERF_SAMPLE_TID | PERF_SAMPLE_TIME appends.
constexpr size_t kSampleIdSize = 16;
std::vector<uint8_t> Record(uint32_t type, const std::vector<uint8_t>& body, uint64_t time) {
  const size_t size = sizeof(perf_event_header) + body.size() + kSampleIdSize;
  perf_event_header h{type, 0, static_cast<uint16_t>(size)};
  std::vector<uint8_t> out(size, 0);  // the trailer's pid and tid stay 0
  std::memcpy(out.data(), &h, sizeof(h));
  if (!body.empty()) std::memcpy(out.data() + sizeof(h), body.data(), body.size());
  std::memcpy(out.data() + size - sizeof(time), &time, sizeof(time));
  return out;
}
template <typename T>
void Put(std::vector<uint8_t>* out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}
std::vector<uint8_t> ReadRecord(uint64_t time, uint32_t pid, uint32_t tid, uint64_t value,
                                uint64_t enabled, uint64_t running, uint64_t id) {
  std::vector<uint8_t> body;
  for (uint32_t v : {pid, tid}) Put(&body, v);
  for (uint64_t v : {value, enabled, running, id}) Put(&body, v);
  return Record(PERF_RECORD_READ, body, time);
}
std::vector<uint8_t> CommRecord(uint64_t time, uint32_t pid, uint32_t tid, const char* comm) {
  std::vector<uint8_t> body;
  for (uint32_t v : {pid, tid}) Put(&body, v);
  char name[16] = {};
  std::strncpy(name, comm, 15);
  body.insert(body.end(), name, name + sizeof(name));
  return Record(PERF_RECORD_COMM, body, time);
}
std::vector<uint8_t> ForkRecord(uint64_t time, uint32_t pid, uint32_t ppid, uint32_t tid,
                                uint32_t ptid) {
  std::vector<uint8_t> body;
  for (uint32_t v : {pid, ppid, tid, ptid}) Put(&body, v);
  Put(&body, time);
  return Record(PERF_RECORD_FORK, body, time);
}

class CounterSidebandTest : public ::testing::Test {
 protected:
  // One CPU, one counted task: task-clock is id 101, page-faults 102; cycles is not opened.
  CounterSidebandTest()
      : events_(*ParseEventList("task-clock,page-faults,cycles")),
        sideband_(events_, 1, {{.event = 0, .owner = 0, .id = 101},
                               {.event = 1, .owner = 0, .id = 102}}) {}
  void Feed(const std::vector<uint8_t>& record) { EXPECT_TRUE(Feed(sideband_, record).ok()); }
  // As the sorter delivers a record: parsed with the side band's layout.
  static absl::Status Feed(CounterSideband& sideband, const std::vector<uint8_t>& record) {
    return ParseRecord(record, CounterSidebandFormat(), sideband).status();
  }
  std::vector<CounterValue> Totals(uint64_t clock, uint64_t faults) {
    return {MakeCounterValue(events_[0], clock, clock, clock),
            MakeCounterValue(events_[1], faults, clock, clock),
            UnsupportedCounterValue(events_[2], "No such file or directory")};
  }
  // The rows of a run whose only counted task is `main_tid` of process `main_tid`.
  std::vector<ThreadCounters> Build(const CounterSideband& sideband,
                                    std::vector<CounterValue> totals, pid_t main_tid) {
    return sideband.Build({std::move(totals)}, main_tid, {main_tid});
  }

  std::vector<EventSpec> events_;
  CounterSideband sideband_;
};

TEST_F(CounterSidebandTest, SplitsTotalsIntoExitedThreadsAndMainRemainder) {
  Feed(CommRecord(1, 100, 100, "app"));
  Feed(ForkRecord(2, 100, 100, 200, 100));
  Feed(CommRecord(3, 100, 200, "worker"));
  Feed(ForkRecord(4, 100, 100, 300, 100));  // keeps the creator's name
  Feed(ReadRecord(5, 100, 200, 30'000'000, 30'000'000, 30'000'000, 101));
  Feed(ReadRecord(5, 100, 200, 4, 30'000'000, 30'000'000, 102));
  Feed(ReadRecord(6, 100, 300, 60'000'000, 60'000'000, 60'000'000, 101));
  Feed(ReadRecord(6, 100, 300, 6, 60'000'000, 60'000'000, 102));
  std::vector<ThreadCounters> rows = Build(sideband_, Totals(100'000'000, 110), 100);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].tid, 100);
  EXPECT_EQ(rows[0].comm, "app");
  EXPECT_EQ(rows[0].values[0].raw, 10'000'000u);
  EXPECT_EQ(rows[0].values[1].raw, 100u);
  EXPECT_FALSE(rows[0].values[2].supported);
  EXPECT_EQ(rows[1].tid, 200);
  EXPECT_EQ(rows[1].pid, 100);
  EXPECT_EQ(rows[1].comm, "worker");
  EXPECT_EQ(rows[1].values[0].raw, 30'000'000u);
  EXPECT_EQ(rows[1].values[1].raw, 4u);
  EXPECT_EQ(rows[2].tid, 300);
  EXPECT_EQ(rows[2].comm, "app");
  EXPECT_EQ(rows[2].values[0].raw, 60'000'000u);
  EXPECT_EQ(rows[2].values[0].tid, 300);
  // The rows add up to the totals.
  uint64_t sum = 0;
  for (const ThreadCounters& r : rows) sum += r.values[0].raw;
  EXPECT_EQ(sum, 100'000'000u);
  EXPECT_EQ(sideband_.incomplete_tasks(), 0u);
}

// Each CPU's ring is drained in turn, so a thread's COMM (written on the CPU it ran on) can be
// read before the FORK its creator wrote on another CPU, and a READ written from another CPU can
// sit among a ring's older records. The sorter puts them in time order.
TEST_F(CounterSidebandTest, RecordsFromSeveralRingsApplyInTimeOrder) {
  // Two CPUs: task-clock is 101 on CPU 0 and 201 on CPU 1.
  CounterSideband two_cpus(events_, 2,
                           {{.event = 0, .owner = 0, .id = 101},
                            {.event = 0, .owner = 0, .id = 201},
                            {.event = 1, .owner = 0, .id = 102},
                            {.event = 1, .owner = 0, .id = 202}});
  testing::RingImage cpu0(4096, 0), cpu1(4096, 0);
  std::vector<RingBuffer> rings;
  rings.push_back(cpu0.Reader());
  rings.push_back(cpu1.Reader());
  RecordSorter sorter(CounterSidebandFormat(), RecordSorter::RingOrder::kUnordered);
  ASSERT_TRUE(cpu1.Append(CommRecord(30, 100, 200, "worker")));
  ASSERT_TRUE(cpu1.Append(ReadRecord(90, 100, 200, 7, 9, 9, 201)));
  ASSERT_TRUE(cpu1.Append(ReadRecord(90, 100, 200, 1, 9, 9, 202)));
  ASSERT_TRUE(cpu0.Append(ReadRecord(90, 100, 200, 3, 9, 0, 101)));
  ASSERT_TRUE(cpu0.Append(CommRecord(10, 100, 100, "app")));
  ASSERT_TRUE(cpu0.Append(ForkRecord(20, 100, 100, 200, 100)));
  sorter.Drain(rings, two_cpus);
  EXPECT_EQ(two_cpus.incomplete_tasks(), 0u) << "nothing applied before the next round";
  sorter.Flush(rings, two_cpus);
  // page-faults of CPU 0's copy never arrived.
  EXPECT_EQ(two_cpus.incomplete_tasks(), 1u);
  ASSERT_TRUE(cpu0.Append(ReadRecord(91, 100, 200, 0, 9, 0, 102)));
  sorter.Flush(rings, two_cpus);
  EXPECT_EQ(two_cpus.incomplete_tasks(), 0u);
  std::vector<ThreadCounters> rows = Build(two_cpus, Totals(50, 5), 100);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].comm, "worker");
  // The per-CPU parts add up; enabled time runs on both CPUs' copies at once, so it is the max.
  EXPECT_EQ(rows[1].values[0].raw, 10u);
  EXPECT_EQ(rows[1].values[0].time_enabled, 9u);
  EXPECT_EQ(rows[1].values[0].time_running, 9u);
  EXPECT_EQ(rows[0].values[0].raw, 40u);
}

// A COMM older than a FORK already read, read one round later, still comes first.
TEST_F(CounterSidebandTest, RecordsNewerThanThePreviousRoundWaitForTheNextOne) {
  testing::RingImage image(4096, 0);
  std::vector<RingBuffer> rings;
  rings.push_back(image.Reader());
  RecordSorter sorter(CounterSidebandFormat(), RecordSorter::RingOrder::kUnordered);
  ASSERT_TRUE(image.Append(CommRecord(10, 100, 100, "app")));
  ASSERT_TRUE(image.Append(ForkRecord(20, 100, 100, 200, 100)));
  sorter.Drain(rings, sideband_);  // nothing applied yet: another ring may still hold older records
  EXPECT_EQ(sideband_.incomplete_tasks(), 0u);
  ASSERT_TRUE(image.Append(CommRecord(15, 100, 100, "renamed")));
  sorter.Drain(rings, sideband_);  // applies up to time 20
  EXPECT_EQ(sideband_.incomplete_tasks(), 1u);
  ASSERT_TRUE(image.Append(ReadRecord(40, 100, 200, 5, 5, 5, 101)));
  ASSERT_TRUE(image.Append(ReadRecord(40, 100, 200, 0, 5, 5, 102)));
  sorter.Flush(rings, sideband_);
  std::vector<ThreadCounters> rows = Build(sideband_, Totals(50, 5), 100);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].comm, "renamed");
  EXPECT_EQ(rows[1].comm, "renamed");  // the name its creator had when it forked
  EXPECT_EQ(sideband_.incomplete_tasks(), 0u);
}

TEST_F(CounterSidebandTest, ReusedTidGetsARowPerTask) {
  Feed(ForkRecord(10, 100, 100, 200, 100));
  Feed(CommRecord(11, 100, 200, "first"));
  Feed(ReadRecord(12, 100, 200, 5, 5, 5, 101));
  Feed(ForkRecord(20, 100, 100, 200, 100));
  Feed(CommRecord(21, 100, 200, "second"));
  Feed(ReadRecord(22, 100, 200, 7, 7, 7, 101));
  std::vector<ThreadCounters> rows = Build(sideband_, Totals(20, 0), 100);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].comm, "first");
  EXPECT_EQ(rows[1].values[0].raw, 5u);
  EXPECT_EQ(rows[2].comm, "second");
  EXPECT_EQ(rows[2].values[0].raw, 7u);
  EXPECT_EQ(rows[0].values[0].raw, 8u);
}

TEST_F(CounterSidebandTest, TaskWithoutReadRecordIsReported) {
  Feed(ForkRecord(10, 100, 100, 200, 100));
  Feed(ForkRecord(11, 100, 100, 300, 100));
  Feed(ReadRecord(12, 100, 300, 5, 5, 5, 101));
  Feed(ReadRecord(12, 100, 300, 1, 5, 5, 102));
  EXPECT_EQ(sideband_.incomplete_tasks(), 1u);
}

// `stat -p`: two threads of a running process are counted; a thread created by the second is
// subtracted from the second's row, not the first's.
TEST_F(CounterSidebandTest, TasksAreSubtractedFromTheThreadTheyInheritedFrom) {
  CounterSideband sideband(events_, 1, {{.event = 0, .owner = 0, .id = 101},
                                        {.event = 0, .owner = 1, .id = 111},
                                        {.event = 1, .owner = 0, .id = 102},
                                        {.event = 1, .owner = 1, .id = 112}});
  sideband.NameTask(100, "server");
  sideband.NameTask(101, "worker");
  for (const std::vector<uint8_t>& r :
       {ForkRecord(10, 100, 100, 300, 101), ReadRecord(20, 100, 300, 40, 40, 40, 111),
        ReadRecord(20, 100, 300, 2, 40, 40, 112)}) {
    ASSERT_TRUE(Feed(sideband, r).ok());
  }
  std::vector<ThreadCounters> rows =
      sideband.Build({Totals(10, 1), Totals(100, 3)}, 100, {100, 101});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].tid, 100);
  EXPECT_EQ(rows[0].comm, "server");
  EXPECT_EQ(rows[0].values[0].raw, 10u);
  EXPECT_EQ(rows[1].tid, 101);
  EXPECT_EQ(rows[1].comm, "worker");
  EXPECT_EQ(rows[1].values[0].raw, 60u);
  EXPECT_EQ(rows[1].values[1].raw, 1u);
  EXPECT_EQ(rows[2].tid, 300);
  EXPECT_EQ(rows[2].comm, "worker");  // named after its creator
  EXPECT_EQ(rows[2].values[0].raw, 40u);
}

TEST_F(CounterSidebandTest, MainThreadKeepsTheNameItWasGiven) {
  sideband_.NameTask(42, "prog");
  std::vector<ThreadCounters> rows = Build(sideband_, Totals(5, 1), 42);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].comm, "prog");
  EXPECT_EQ(rows[0].values[0].raw, 5u);
}

TEST_F(CounterSidebandTest, CountsLostAndIgnoresUnknownIdsAndGarbage) {
  std::vector<uint8_t> lost_body;
  Put(&lost_body, uint64_t{101});
  Put(&lost_body, uint64_t{7});
  Feed(Record(PERF_RECORD_LOST, lost_body, 1));
  Feed(ReadRecord(2, 1, 2, 3, 4, 5, /*id=*/999));
  std::vector<uint8_t> truncated = ReadRecord(3, 1, 2, 3, 4, 5, 101);
  truncated.resize(20);
  // Records shorter than their fields are the parser's kDataLoss (the sorter counts them) and
  // never reach the side band.
  EXPECT_FALSE(Feed(sideband_, truncated).ok());
  EXPECT_FALSE(Feed(sideband_, Record(PERF_RECORD_READ, {1, 2, 3, 4, 5, 6, 7, 8}, 4)).ok());
  EXPECT_FALSE(Feed(sideband_, Record(PERF_RECORD_FORK, {1, 2, 3, 4, 5, 6, 7, 8}, 5)).ok());
  EXPECT_EQ(sideband_.lost(), 7u);
  EXPECT_EQ(sideband_.incomplete_tasks(), 0u);
  EXPECT_EQ(Build(sideband_, Totals(5, 1), 1).size(), 1u);
}

// A memfd stands in for the counting fd: the test maps the same two pages (metadata, one data
// page) that CounterSet maps for a CPU's side band, and writes what the kernel would.
TEST(CounterSidebandRingTest, HeaderLargerThanTheRingSkipsTheBatchWithoutReadingIt) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  ScopedFd fd(static_cast<int>(::syscall(SYS_memfd_create, "counter-ring", MFD_CLOEXEC)));
  ASSERT_TRUE(fd.valid());
  ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(2 * page)), 0);
  std::vector<RingBuffer> rings;
  NP_ASSERT_OK_AND_ASSIGN(RingBuffer ring, RingBuffer::Map(fd.get(), 1, 1));
  rings.push_back(std::move(ring));
  RecordSorter sorter(CounterSidebandFormat(), RecordSorter::RingOrder::kUnordered);
  void* view = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(view, MAP_FAILED);
  auto* meta = static_cast<perf_event_mmap_page*>(view);
  uint8_t* data = static_cast<uint8_t*>(view) + page;

  // The last 8 bytes of the data area hold a header claiming 0xfff8 bytes, and data_head says
  // they were all written: reassembling it would read 60 KiB past a 4 KiB ring.
  const perf_event_header huge{PERF_RECORD_LOST, 0, 0xfff8};
  meta->data_tail = page - 8;
  std::memcpy(data + page - 8, &huge, sizeof(huge));
  meta->data_head = meta->data_tail + huge.size;
  CounterSideband sideband(*ParseEventList("task-clock"), 1, {});
  sorter.Flush(rings, sideband);
  EXPECT_EQ(meta->data_tail, meta->data_head) << "the batch is skipped, the ring not wedged";
  EXPECT_EQ(sideband.lost(), 0u);

  // The next record the kernel writes (here across the end of the ring) is read.
  std::vector<uint8_t> lost_body;
  Put(&lost_body, uint64_t{101});
  Put(&lost_body, uint64_t{7});
  const std::vector<uint8_t> lost = Record(PERF_RECORD_LOST, lost_body, 1);
  for (size_t i = 0; i < lost.size(); ++i) data[(meta->data_head + i) % page] = lost[i];
  meta->data_head += lost.size();
  sorter.Flush(rings, sideband);
  EXPECT_EQ(sideband.lost(), 7u);
  EXPECT_EQ(meta->data_tail, meta->data_head);
  ::munmap(view, 2 * page);
}

}  // namespace
}  // namespace nativeprof::sampler
