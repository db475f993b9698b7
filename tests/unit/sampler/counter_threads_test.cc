#include "sampler/counter_threads.h"

#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

// Byte-exact builders for the side-band records the kernel writes.
std::vector<uint8_t> Record(uint32_t type, const std::vector<uint8_t>& body) {
  perf_event_header h{type, 0, static_cast<uint16_t>(sizeof(h) + body.size())};
  std::vector<uint8_t> out(sizeof(h));
  std::memcpy(out.data(), &h, sizeof(h));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}
template <typename T>
void Put(std::vector<uint8_t>* out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}
std::vector<uint8_t> ReadRecord(uint32_t pid, uint32_t tid, uint64_t value, uint64_t enabled,
                                uint64_t running, uint64_t id) {
  std::vector<uint8_t> body;
  for (uint32_t v : {pid, tid}) Put(&body, v);
  for (uint64_t v : {value, enabled, running, id}) Put(&body, v);
  return Record(PERF_RECORD_READ, body);
}
std::vector<uint8_t> CommRecord(uint32_t pid, uint32_t tid, const char* comm) {
  std::vector<uint8_t> body;
  for (uint32_t v : {pid, tid}) Put(&body, v);
  char name[16] = {};
  std::strncpy(name, comm, 15);
  body.insert(body.end(), name, name + sizeof(name));
  return Record(PERF_RECORD_COMM, body);
}
std::vector<uint8_t> ForkRecord(uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid) {
  std::vector<uint8_t> body;
  for (uint32_t v : {pid, ppid, tid, ptid}) Put(&body, v);
  Put(&body, uint64_t{0});
  return Record(PERF_RECORD_FORK, body);
}

class CounterSidebandTest : public ::testing::Test {
 protected:
  CounterSidebandTest()
      : events_(*ParseEventList("task-clock,page-faults,cycles")),
        sideband_(events_, {101, 102, 0}) {}
  void Feed(const std::vector<uint8_t>& record) { sideband_.OnRecord(record); }

  std::vector<EventSpec> events_;
  CounterSideband sideband_;
};

TEST_F(CounterSidebandTest, SplitsTotalsIntoExitedThreadsAndMainRemainder) {
  Feed(CommRecord(100, 100, "app"));
  Feed(ForkRecord(100, 100, 200, 100));
  Feed(CommRecord(100, 200, "worker"));
  Feed(ForkRecord(100, 100, 300, 100));  // keeps the creator's name
  Feed(ReadRecord(100, 200, 30'000'000, 30'000'000, 30'000'000, 101));
  Feed(ReadRecord(100, 200, 4, 30'000'000, 30'000'000, 102));
  Feed(ReadRecord(100, 300, 60'000'000, 60'000'000, 60'000'000, 101));
  Feed(ReadRecord(100, 300, 6, 60'000'000, 60'000'000, 102));
  std::vector<CounterValue> totals = {
      MakeCounterValue(events_[0], 100'000'000, 100'000'000, 100'000'000),
      MakeCounterValue(events_[1], 110, 100'000'000, 100'000'000),
      UnsupportedCounterValue(events_[2], "No such file or directory")};
  std::vector<ThreadCounters> rows = sideband_.Build(totals, 100, "fallback");
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
}

TEST_F(CounterSidebandTest, MainThreadFallsBackToGivenComm) {
  std::vector<CounterValue> totals = {MakeCounterValue(events_[0], 5, 5, 5),
                                      MakeCounterValue(events_[1], 1, 5, 5),
                                      UnsupportedCounterValue(events_[2], "")};
  std::vector<ThreadCounters> rows = sideband_.Build(totals, 42, "prog");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].comm, "prog");
  EXPECT_EQ(rows[0].values[0].raw, 5u);
}

TEST_F(CounterSidebandTest, CountsLostAndIgnoresUnknownIdsAndGarbage) {
  std::vector<uint8_t> lost_body;
  Put(&lost_body, uint64_t{101});
  Put(&lost_body, uint64_t{7});
  Feed(Record(PERF_RECORD_LOST, lost_body));
  Feed(ReadRecord(1, 2, 3, 4, 5, /*id=*/999));
  std::vector<uint8_t> truncated = ReadRecord(1, 2, 3, 4, 5, 101);
  truncated.resize(20);
  Feed(truncated);
  std::vector<uint8_t> short_read = Record(PERF_RECORD_READ, {1, 2, 3});
  Feed(short_read);
  EXPECT_EQ(sideband_.lost(), 7u);
  EXPECT_EQ(sideband_.malformed(), 2u);
  std::vector<CounterValue> totals = {MakeCounterValue(events_[0], 5, 5, 5),
                                      MakeCounterValue(events_[1], 1, 5, 5),
                                      UnsupportedCounterValue(events_[2], "")};
  EXPECT_EQ(sideband_.Build(totals, 1, "x").size(), 1u);
}

}  // namespace
}  // namespace nativeprof::sampler
