#include "sampler/record_sorter.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/record_builder.h"

namespace nativeprof::sampler {
namespace {

using ::nativeprof::testing::FramePointerFormat;
using ::nativeprof::testing::MmapBuilder;
using ::nativeprof::testing::RecordBytes;
using ::nativeprof::testing::RecordWriter;
using ::nativeprof::testing::RingImage;
using ::nativeprof::testing::SampleBuilder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Writes what it was given as "S<time>" (sample) or "M<time>" (mmap), in delivery order.
class OrderSink : public RecordSink {
 public:
  void OnSample(const SampleView& s) override { seen.push_back(absl::StrCat("S", s.time_ns)); }
  void OnMmap(const MmapView& m) override { seen.push_back(absl::StrCat("M", m.time_ns)); }
  void OnComm(const CommView&) override {}
  void OnTask(const TaskView&) override {}
  void OnLost(const LostView&) override {}
  std::vector<std::string> Take() { return std::exchange(seen, {}); }
  std::vector<std::string> seen;
};

RecordBytes Sample(uint64_t time, const SampleFormat& f = FramePointerFormat()) {
  return SampleBuilder(f).Pid(1).Tid(1).Ip(0x401000).Time(time).Build();
}
RecordBytes Mmap(uint64_t time, const SampleFormat& f = FramePointerFormat()) {
  return MmapBuilder(f).Pid(1).Tid(1).Start(0x400000).Len(0x1000).Filename("/bin/app")
      .Time(time).Build();
}

// Two CPUs' rings, as a Session has them.
class TwoRings {
 public:
  TwoRings() : images_{RingImage(4096, 0), RingImage(4096, 0)} {
    for (RingImage& image : images_) rings_.push_back(image.Reader());
  }
  void Write(size_t ring, const RecordBytes& record) { ASSERT_TRUE(images_[ring].Append(record)); }
  std::span<RingBuffer> rings() { return rings_; }
  bool Consumed(size_t ring) const { return images_[ring].tail() == images_[ring].head(); }

 private:
  RingImage images_[2];
  std::vector<RingBuffer> rings_;
};

// The case the sorter exists for: CPU 1 published the MMAP a sample on CPU 0 needs only after
// the drain had read both rings, so the sample is read one drain before its mapping.
TEST(RecordSorterTest, MmapReadOneDrainAfterTheSampleThatNeedsItIsDeliveredFirst) {
  TwoRings r;
  RecordSorter sorter(FramePointerFormat(), RecordSorter::RingOrder::kTimeOrdered);
  OrderSink sink;
  r.Write(0, Sample(20));
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), IsEmpty()) << "a ring not yet read to its end could precede it";
  EXPECT_EQ(sorter.held_records(), 1u);
  EXPECT_TRUE(r.Consumed(0)) << "held records are copies: the ring space is free again";
  r.Write(1, Mmap(10));
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), ElementsAre("M10", "S20"));
  EXPECT_EQ(sorter.held_records(), 0u);
}

TEST(RecordSorterTest, RecordsUpToThePreviousDrainsNewestAreMergedAcrossRings) {
  TwoRings r;
  RecordSorter sorter(FramePointerFormat(), RecordSorter::RingOrder::kTimeOrdered);
  OrderSink sink;
  r.Write(0, Sample(5));
  r.Write(0, Sample(30));
  r.Write(1, Mmap(10));
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), IsEmpty());
  r.Write(1, Sample(25));
  r.Write(0, Sample(40));
  sorter.Drain(r.rings(), sink);  // up to 30, the newest the first drain saw
  EXPECT_THAT(sink.Take(), ElementsAre("S5", "M10", "S25", "S30"));
  r.Write(1, Sample(35));
  sorter.Flush(r.rings(), sink);
  EXPECT_THAT(sink.Take(), ElementsAre("S35", "S40"));
  EXPECT_GT(sorter.peak_held_bytes(), 0u);
}

uint64_t FakeNow() { return 100'000'000; }

// With CLOCK_MONOTONIC record times, what is older than the drain's start by more than a write
// can take goes out in the drain that reads it; only the last moments are held.
TEST(RecordSorterTest, WithMonotonicTimesOnlyTheLastMomentsAreHeld) {
  SampleFormat f = FramePointerFormat();
  f.monotonic_clock = true;
  TwoRings r;
  RecordSorter sorter(f, RecordSorter::RingOrder::kTimeOrdered, FakeNow);
  OrderSink sink;
  const uint64_t old_enough = FakeNow() - RecordSorter::kInFlightNs;
  r.Write(0, Sample(old_enough - 1, f));
  r.Write(1, Mmap(old_enough - 2, f));
  r.Write(0, Sample(old_enough + 1, f));
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), ElementsAre(absl::StrCat("M", old_enough - 2),
                                       absl::StrCat("S", old_enough - 1)));
  // The newer sample stays in its ring, unread and uncopied, for the next drain.
  EXPECT_EQ(sorter.held_records(), 0u);
  EXPECT_FALSE(r.Consumed(0));
  EXPECT_TRUE(r.Consumed(1));
  sorter.Flush(r.rings(), sink);
  EXPECT_THAT(sink.Take(), ElementsAre(absl::StrCat("S", old_enough + 1)));
  EXPECT_TRUE(r.Consumed(0));
}

// Records too new to deliver are left in a ring only while it has room: past a quarter of it
// they are copied out (held) until a quarter is left, so a burst does not fill the ring the
// kernel writes into.
TEST(RecordSorterTest, ANearlyFullRingIsEmptiedIntoTheHeldRecords) {
  SampleFormat f = FramePointerFormat();
  f.monotonic_clock = true;
  TwoRings r;
  RecordSorter sorter(f, RecordSorter::RingOrder::kTimeOrdered, FakeNow);
  OrderSink sink;
  const uint64_t young = FakeNow() - RecordSorter::kInFlightNs + 100;
  size_t written = 0, records = 0;
  for (uint64_t t = young; written < 4096 / 4 + 64; ++t, ++records) {
    const RecordBytes rec = Sample(t, f);
    r.Write(0, rec);
    written += rec.size();
  }
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), IsEmpty());
  EXPECT_GT(sorter.held_records(), 0u);
  EXPECT_FALSE(r.Consumed(0));
  sorter.Flush(r.rings(), sink);
  EXPECT_EQ(sink.Take().size(), records);
}

// The allocation preload's ring: its writers wait for room, so records too new to deliver stay in
// it past a quarter of it (where a kernel ring's are copied out), up to half.
TEST(RecordSorterTest, ARingWhoseWritersWaitKeepsItsNewRecords) {
  SampleFormat f = FramePointerFormat();
  f.monotonic_clock = true;
  TwoRings r;
  r.rings()[0].set_writers_wait(true);
  RecordSorter sorter(f, RecordSorter::RingOrder::kTimeOrdered, FakeNow);
  OrderSink sink;
  const uint64_t young = FakeNow() - RecordSorter::kInFlightNs + 100;
  size_t written = 0, records = 0;
  r.Write(0, Sample(young - 200, f));
  for (uint64_t t = young; written < 4096 * 3 / 8; ++t, ++records) {
    const RecordBytes rec = Sample(t, f);
    r.Write(0, rec);
    written += rec.size();
  }
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), ElementsAre(absl::StrCat("S", young - 200)));
  EXPECT_EQ(sorter.held_records(), 0u);
  EXPECT_EQ(sorter.peak_held_bytes(), 0u);
  EXPECT_FALSE(r.Consumed(0));
  sorter.Flush(r.rings(), sink);
  EXPECT_EQ(sink.Take().size(), records);
  EXPECT_TRUE(r.Consumed(0));
}

// A counting side-band ring gets records from other CPUs (an exiting task writes its READ
// records into every CPU's ring), so one ring's records are sorted, not only merged.
TEST(RecordSorterTest, UnorderedRingsAreSortedAndHeldRecordsJoinThem) {
  TwoRings r;
  RecordSorter sorter(FramePointerFormat(), RecordSorter::RingOrder::kUnordered);
  OrderSink sink;
  r.Write(0, Sample(30));
  r.Write(0, Sample(10));
  r.Write(1, Sample(20));
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), IsEmpty());
  r.Write(0, Sample(15));
  r.Write(1, Sample(50));
  sorter.Drain(r.rings(), sink);
  EXPECT_THAT(sink.Take(), ElementsAre("S10", "S15", "S20", "S30"));
  sorter.Hold(Sample(40));  // e.g. recovered past a ring's data_head
  sorter.Flush(r.rings(), sink);
  EXPECT_THAT(sink.Take(), ElementsAre("S40", "S50"));
}

TEST(RecordSorterTest, RecordsShorterThanTheirFieldsAreCountedAndSkipped) {
  TwoRings r;
  RecordSorter sorter(FramePointerFormat(), RecordSorter::RingOrder::kTimeOrdered);
  OrderSink sink;
  RecordWriter fork(PERF_RECORD_FORK, 0);
  fork.U64(0);  // half a body and no trailer
  r.Write(0, fork.Finish());
  r.Write(0, Sample(7));
  sorter.Flush(r.rings(), sink);
  EXPECT_EQ(sorter.parse_errors(), 1u);
  EXPECT_THAT(sink.Take(), ElementsAre("S7"));
}

}  // namespace
}  // namespace nativeprof::sampler
