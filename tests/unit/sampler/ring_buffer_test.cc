#include "sampler/ring_buffer.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/record_builder.h"

namespace nativeprof::sampler {
namespace {

using ::nativeprof::testing::RecordBytes;
using ::nativeprof::testing::RingImage;
using ::nativeprof::testing::SampleBuilder;
using ::testing::ElementsAre;

RecordBytes Sample(uint64_t ip, size_t frames = 0) {
  std::vector<uint64_t> chain;
  for (size_t i = 0; i < frames; ++i) chain.push_back(0x1000 + i);
  return SampleBuilder().Pid(1).Tid(1).Ip(ip).Time(ip).Callchain(chain).Build();
}

RecordBytes Header(uint32_t type, uint16_t size) {
  RecordBytes b(8, 0);
  std::memcpy(b.data(), &type, 4);
  std::memcpy(b.data() + 6, &size, 2);
  return b;
}

struct Drained {
  std::vector<RecordBytes> records;
  std::vector<bool> aligned;
  RingBuffer::DrainStats stats;
};

Drained DrainAll(RingBuffer& ring) {
  Drained d;
  d.stats = ring.Drain([&](std::span<const uint8_t> r) {
    d.records.emplace_back(r.begin(), r.end());
    d.aligned.push_back(reinterpret_cast<uintptr_t>(r.data()) % 8 == 0);
  });
  return d;
}

TEST(RingBufferTest, DeliversRecordsInOrderAndPublishesTail) {
  RingImage image(4096, 0);
  RecordBytes a = Sample(1), b = Sample(2, 5), c = Sample(3, 1);
  ASSERT_TRUE(image.Append(a));
  ASSERT_TRUE(image.Append(b));
  ASSERT_TRUE(image.Append(c));
  RingBuffer ring = image.Reader();
  ASSERT_TRUE(ring.HasData());
  Drained d = DrainAll(ring);
  EXPECT_THAT(d.records, ElementsAre(a, b, c));
  EXPECT_EQ(d.stats.records, 3u);
  EXPECT_EQ(d.stats.bytes, a.size() + b.size() + c.size());
  EXPECT_EQ(d.stats.corrupt, 0u);
  EXPECT_EQ(image.tail(), image.head());
  EXPECT_FALSE(ring.HasData());

  // Nothing new: an empty drain with zeroed stats.
  Drained again = DrainAll(ring);
  EXPECT_TRUE(again.records.empty());
  EXPECT_EQ(again.stats.records, 0u);
  EXPECT_EQ(again.stats.bytes, 0u);
}

// A record split across the end of the data area must come out whole, identical and aligned,
// whatever the absolute position (positions beyond data_size exercise the masking).
TEST(RingBufferTest, WrappedRecordIsByteIdenticalAndAligned) {
  for (uint64_t start : {uint64_t{256 - 8}, uint64_t{256 - 16}, uint64_t{3 * 256 - 40},
                         uint64_t{(uint64_t{1} << 40) - 24}}) {
    SCOPED_TRACE(start);
    RingImage image(256, start);
    RecordBytes wrapped = Sample(7, 8);  // 8 + 56 + 8 + 64 bytes: always crosses the end here
    RecordBytes next = Sample(8, 1);
    ASSERT_GT(wrapped.size(), 64u);
    ASSERT_TRUE(image.Append(wrapped));
    ASSERT_TRUE(image.Append(next));
    RingBuffer ring = image.Reader();
    Drained d = DrainAll(ring);
    ASSERT_EQ(d.records.size(), 2u);
    EXPECT_EQ(d.records[0], wrapped);
    EXPECT_EQ(d.records[1], next);
    EXPECT_THAT(d.aligned, ElementsAre(true, true));
    EXPECT_EQ(d.stats.corrupt, 0u);
    EXPECT_EQ(image.tail(), start + wrapped.size() + next.size());
  }
}

// Two wrapped records of growing size in one pass: the scratch buffer grows and still holds the
// right bytes.
TEST(RingBufferTest, SuccessiveWrapsAcrossPasses) {
  RingImage image(128, 128 - 16);
  std::vector<RecordBytes> all;
  for (int pass = 0; pass < 6; ++pass) {
    RecordBytes r = Sample(100 + pass, 2 + pass);
    ASSERT_TRUE(image.Append(r));
    RingBuffer ring = image.Reader();
    Drained d = DrainAll(ring);
    ASSERT_EQ(d.records.size(), 1u);
    EXPECT_EQ(d.records[0], r) << "pass " << pass;
    EXPECT_TRUE(d.aligned[0]);
  }
}

TEST(RingBufferTest, TailIsPublishedOnlyAtEndRead) {
  RingImage image(1024, 64);
  ASSERT_TRUE(image.Append(Sample(1)));
  ASSERT_TRUE(image.Append(Sample(2)));
  RingBuffer ring = image.Reader();
  ring.BeginRead();
  ASSERT_FALSE(ring.Peek().empty());
  ring.Advance();
  ASSERT_FALSE(ring.Peek().empty());
  ring.Advance();
  EXPECT_TRUE(ring.Peek().empty());
  EXPECT_EQ(image.tail(), 64u) << "tail moved before EndRead";
  ring.EndRead();
  EXPECT_EQ(image.tail(), image.head());
}

TEST(RingBufferTest, PeekIsIdempotentAndHeadIsSnapshotAtBeginRead) {
  RingImage image(1024, 0);
  RecordBytes a = Sample(1), b = Sample(2);
  ASSERT_TRUE(image.Append(a));
  RingBuffer ring = image.Reader();
  ring.BeginRead();
  std::span<const uint8_t> p1 = ring.Peek();
  std::span<const uint8_t> p2 = ring.Peek();
  EXPECT_EQ(p1.data(), p2.data());
  EXPECT_EQ(p1.size(), a.size());
  EXPECT_EQ(p2.size(), a.size());
  // Written after BeginRead: not part of this batch.
  ASSERT_TRUE(image.Append(b));
  ring.Advance();
  EXPECT_TRUE(ring.Peek().empty());
  ring.EndRead();
  EXPECT_EQ(image.tail(), a.size());
  Drained d = DrainAll(ring);
  EXPECT_THAT(d.records, ElementsAre(b));
}

TEST(RingBufferTest, AdvanceWithoutPeekMovesToTheNextRecord) {
  RingImage image(1024, 0);
  RecordBytes a = Sample(1), b = Sample(2);
  ASSERT_TRUE(image.Append(a));
  ASSERT_TRUE(image.Append(b));
  RingBuffer ring = image.Reader();
  ring.BeginRead();
  ring.Advance();
  std::span<const uint8_t> p = ring.Peek();
  EXPECT_EQ(RecordBytes(p.begin(), p.end()), b);
  ring.Advance();
  ring.Advance();  // past the end: no effect
  ring.EndRead();
  EXPECT_EQ(image.tail(), a.size() + b.size());
  EXPECT_EQ(ring.TakeStats().records, 2u);
}

struct CorruptCase {
  const char* name;
  RecordBytes bytes;
};

// Headers the kernel cannot have written: counted as corrupt, the rest of the batch skipped
// (tail = head) and no record delivered after the valid ones - and, above all, no endless loop.
TEST(RingBufferTest, CorruptHeadersSkipTheBatch) {
  std::vector<CorruptCase> cases;
  cases.push_back({"truncated header", RecordBytes(4, 0xab)});
  cases.push_back({"size 0", Header(PERF_RECORD_SAMPLE, 0)});
  cases.push_back({"size 4", Header(PERF_RECORD_SAMPLE, 4)});
  {
    RecordBytes b = Header(PERF_RECORD_SAMPLE, 64);  // claims more than is available
    b.resize(32, 0);
    cases.push_back({"size > available", b});
  }
  {
    RecordBytes b = Header(PERF_RECORD_SAMPLE, 12);  // not a multiple of 8
    b.resize(24, 0);
    cases.push_back({"size % 8 != 0", b});
  }
  for (uint64_t start : {uint64_t{0}, uint64_t{512 - 24}}) {
    for (const CorruptCase& c : cases) {
      SCOPED_TRACE(::testing::Message() << c.name << " at " << start);
      RingImage image(512, start);
      RecordBytes good = Sample(1, 1);
      ASSERT_TRUE(image.Append(good));
      ASSERT_TRUE(image.Append(c.bytes));
      RingBuffer ring = image.Reader();
      Drained d = DrainAll(ring);
      EXPECT_THAT(d.records, ElementsAre(good));
      EXPECT_EQ(d.stats.records, 1u);
      EXPECT_EQ(d.stats.corrupt, 1u);
      EXPECT_EQ(image.tail(), image.head());
      EXPECT_FALSE(ring.HasData());
    }
  }
}

// A header claiming more bytes than the whole data area (only possible if data_head ran more
// than a buffer ahead of data_tail, which the kernel never does) must be rejected, not copied:
// copying it would read past the end of the data area.
TEST(RingBufferTest, RecordLargerThanTheDataAreaIsCorrupt) {
  RingImage image(64, 0);
  RecordBytes big = Header(PERF_RECORD_SAMPLE, 128);
  ASSERT_TRUE(image.Append(big));
  image.SetHead(128);  // data_head a whole buffer beyond data_tail
  RingBuffer ring = image.Reader();
  size_t delivered = 0;
  RingBuffer::DrainStats s = ring.Drain([&](std::span<const uint8_t>) { ++delivered; });
  EXPECT_EQ(delivered, 0u);
  EXPECT_EQ(s.corrupt, 1u);
  EXPECT_EQ(image.tail(), 128u);
}

TEST(RingBufferTest, TakeStatsAccumulatesCursorReads) {
  RingImage image(1024, 0);
  RecordBytes a = Sample(1), b = Sample(2, 3);
  ASSERT_TRUE(image.Append(a));
  ASSERT_TRUE(image.Append(b));
  ASSERT_TRUE(image.Append(Header(PERF_RECORD_SAMPLE, 0)));
  RingBuffer ring = image.Reader();
  ring.BeginRead();
  while (!ring.Peek().empty()) ring.Advance();
  ring.EndRead();
  RingBuffer::DrainStats s = ring.TakeStats();
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(s.bytes, a.size() + b.size());
  EXPECT_EQ(s.corrupt, 1u);
  s = ring.TakeStats();
  EXPECT_EQ(s.records, 0u);
  EXPECT_EQ(s.corrupt, 0u);
}

TEST(RingBufferTest, MapRejectsNonPowerOfTwo) {
  absl::StatusOr<RingBuffer> r = RingBuffer::Map(-1, 3, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  r = RingBuffer::Map(-1, 0, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

// A ring whose data_head stopped being published: the records the kernel went on writing are
// found in the first lap, past anything the predicate rejects, and the tail moves past them.
TEST(RingBufferTest, DrainUnpublishedRecoversPlausibleRecordsOfTheFirstLap) {
  RingImage image(512, 0);
  const RecordBytes a = Sample(0x10);
  const RecordBytes junk = Header(PERF_RECORD_LOST, 24);  // a header the predicate refuses
  const RecordBytes b = Sample(0x20, 2);
  ASSERT_TRUE(image.Append(a));
  ASSERT_TRUE(image.Append(junk));
  ASSERT_TRUE(image.Append(RecordBytes(16, 0)));
  ASSERT_TRUE(image.Append(b));
  const uint64_t written = image.head();
  image.SetHead(0);  // nothing was published
  RingBuffer ring = image.Reader();
  EXPECT_TRUE(DrainAll(ring).records.empty());

  std::vector<RecordBytes> recovered;
  const size_t n = ring.DrainUnpublished(
      [](std::span<const uint8_t> r) {
        return reinterpret_cast<const perf_event_header*>(r.data())->type == PERF_RECORD_SAMPLE;
      },
      [&](std::span<const uint8_t> r) { recovered.emplace_back(r.begin(), r.end()); });
  EXPECT_EQ(n, 2u);
  EXPECT_THAT(recovered, ElementsAre(a, b));
  EXPECT_GE(image.tail(), written);

  // After the first lap nothing is trusted: the bytes there may be an older lap's.
  RingImage lapped(512, 512);
  ASSERT_TRUE(lapped.Append(a));
  lapped.SetHead(512);
  RingBuffer lapped_ring = lapped.Reader();
  EXPECT_EQ(lapped_ring.DrainUnpublished([](std::span<const uint8_t>) { return true; },
                                         [](std::span<const uint8_t>) {}),
            0u);
}

}  // namespace
}  // namespace nativeprof::sampler
