#include "sampler/record_parser.h"

#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/alloc_channel_layout.h"
#include "sampler/counter_threads.h"
#include "tests/testing/record_builder.h"
#include "tests/unit/sampler/recording_sink.h"

namespace nativeprof::sampler {
namespace {

using ::nativeprof::testing::CommBuilder;
using ::nativeprof::testing::DwarfFormat;
using ::nativeprof::testing::ExitBuilder;
using ::nativeprof::testing::ForkBuilder;
using ::nativeprof::testing::FramePointerFormat;
using ::nativeprof::testing::LostBuilder;
using ::nativeprof::testing::MmapBuilder;
using ::nativeprof::testing::ReadBuilder;
using ::nativeprof::testing::RecordBytes;
using ::nativeprof::testing::SampleBuilder;
using ::nativeprof::testing::ThrottleBuilder;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr uint64_t kContextKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
constexpr uint64_t kContextUser = static_cast<uint64_t>(PERF_CONTEXT_USER);

absl::StatusOr<ParseOutcome> Parse(const RecordBytes& r, const SampleFormat& f, RecordSink& sink) {
  return ParseRecord(std::span<const uint8_t>(r.data(), r.size()), f, sink);
}

// The format with every trailer field, so each trailer offset is exercised.
SampleFormat FullIdFormat() {
  SampleFormat f = FramePointerFormat();
  f.sample_type |= PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_IDENTIFIER;
  return f;
}

TEST(RecordParserTest, SampleWithKernelAndUserCallchain) {
  const SampleFormat f = FramePointerFormat();
  RecordBytes r = SampleBuilder(f)
                      .Pid(7)
                      .Tid(8)
                      .Ip(0xffffffff81000010)
                      .Time(123456789)
                      .Cpu(1)
                      .Period(1001001)
                      .Callchain({kContextKernel, 0xffffffff81000010, 0xffffffff81000200,
                                  kContextUser, 0x401000, 0x402000, 0x403000})
                      .Build();
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(*o, ParseOutcome::kDelivered);
  ASSERT_EQ(sink.samples.size(), 1u);
  const OwnedSample& s = sink.samples[0];
  EXPECT_EQ(s.view.pid, 7u);
  EXPECT_EQ(s.view.tid, 8u);
  EXPECT_EQ(s.view.ip, 0xffffffff81000010u);
  EXPECT_EQ(s.view.time_ns, 123456789u);
  EXPECT_EQ(s.view.cpu, 1u);
  EXPECT_EQ(s.view.period, 1001001u);
  EXPECT_THAT(s.callchain, ElementsAre(kContextKernel, 0xffffffff81000010, 0xffffffff81000200,
                                       kContextUser, 0x401000, 0x402000, 0x403000));
  EXPECT_EQ(s.view.regs_abi, 0u);
  EXPECT_THAT(s.regs_user, IsEmpty());
  EXPECT_THAT(s.stack_user, IsEmpty());
  EXPECT_EQ(sink.total(), 1u);
}

// Every optional field nativeprof may see before the callchain, in the kernel's order; the
// values after them only come out right if each one was skipped with the right size.
TEST(RecordParserTest, SampleWithEveryFieldBeforeTheCallchain) {
  SampleFormat f = FramePointerFormat();
  f.sample_type |= PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                   PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_READ | PERF_SAMPLE_RAW |
                   PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  f.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
  f.regs_user_mask = 0b1011;
  std::vector<uint8_t> stack(32);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<uint8_t>(i + 1);
  RecordBytes r = SampleBuilder(f)
                      .Identifier(0xaaaa)
                      .Ip(0x1234)
                      .Pid(3)
                      .Tid(4)
                      .Time(99)
                      .Addr(0xdead)
                      .Id(0xbbbb)
                      .StreamId(0xcccc)
                      .Cpu(5)
                      .Period(10)
                      .ReadValues({111, 222, 333, 444})
                      .Callchain({kContextUser, 0x1234, 0x5678})
                      .Raw({1, 2, 3, 4, 5, 6, 7})  // 4 + 7 -> padded to 16
                      .RegsUser(PERF_SAMPLE_REGS_ABI_64, {0x10, 0x20, 0x30})
                      .StackUser(stack, 24)
                      .Build();
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(sink.samples.size(), 1u);
  const OwnedSample& s = sink.samples[0];
  EXPECT_EQ(s.view.ip, 0x1234u);
  EXPECT_EQ(s.view.pid, 3u);
  EXPECT_EQ(s.view.tid, 4u);
  EXPECT_EQ(s.view.time_ns, 99u);
  EXPECT_EQ(s.view.cpu, 5u);
  EXPECT_EQ(s.view.period, 10u);
  EXPECT_THAT(s.callchain, ElementsAre(kContextUser, 0x1234, 0x5678));
  EXPECT_EQ(s.view.regs_abi, static_cast<uint64_t>(PERF_SAMPLE_REGS_ABI_64));
  EXPECT_THAT(s.regs_user, ElementsAre(0x10, 0x20, 0x30));
  EXPECT_EQ(s.view.stack_user_requested, 32u);
  EXPECT_THAT(s.stack_user, ElementsAreArray(stack.data(), 24));
}

TEST(RecordParserTest, SampleReadGroupIsSkipped) {
  SampleFormat f = FramePointerFormat();
  f.sample_type |= PERF_SAMPLE_READ;
  f.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID;
  // nr, time_enabled, {value, id} x 2
  RecordBytes r = SampleBuilder(f).Ip(1).Period(5).ReadValues({2, 1000, 10, 1, 20, 2})
                      .Callchain({kContextUser, 0x77}).Build();
  RecordingSink sink;
  ASSERT_TRUE(Parse(r, f, sink).ok());
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_THAT(sink.samples[0].callchain, ElementsAre(kContextUser, 0x77));

  // A group count larger than the record cannot be skipped.
  RecordBytes bad = SampleBuilder(f).Ip(1).ReadValues({1000000, 0, 0, 0}).Build();
  RecordingSink bad_sink;
  EXPECT_EQ(Parse(bad, f, bad_sink).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(bad_sink.total(), 0u);
}

// PERF_FORMAT_LOST (Linux 6.0) adds a `lost` value to the read block: after `value` in the
// single-event layout and after each {value, id} in a group.
TEST(RecordParserTest, SampleReadWithFormatLost) {
  SampleFormat f = FramePointerFormat();
  f.sample_type |= PERF_SAMPLE_READ;
  f.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
  RecordBytes r = SampleBuilder(f).Ip(1).ReadValues({100, 7, 0})
                      .Callchain({kContextUser, 0x77, 0x88}).Build();
  RecordingSink sink;
  ASSERT_TRUE(Parse(r, f, sink).ok());
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_THAT(sink.samples[0].callchain, ElementsAre(kContextUser, 0x77, 0x88));

  f.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST;
  // nr, {value, id, lost} x 2
  RecordBytes g = SampleBuilder(f).Ip(1).ReadValues({2, 10, 1, 0, 20, 2, 0})
                      .Callchain({kContextUser, 0x99}).Build();
  RecordingSink group_sink;
  ASSERT_TRUE(Parse(g, f, group_sink).ok());
  ASSERT_EQ(group_sink.samples.size(), 1u);
  EXPECT_THAT(group_sink.samples[0].callchain, ElementsAre(kContextUser, 0x99));
}

TEST(RecordParserTest, RegsUserWithAbiNoneHasNoValues) {
  const SampleFormat f = DwarfFormat(0xff);  // 8 registers requested
  std::vector<uint8_t> stack(16, 0x5a);
  RecordBytes r = SampleBuilder(f).Ip(9).RegsUser(PERF_SAMPLE_REGS_ABI_NONE, {})
                      .StackUser(stack, 16).Build();
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_EQ(sink.samples[0].view.regs_abi, 0u);
  EXPECT_THAT(sink.samples[0].regs_user, IsEmpty());
  EXPECT_EQ(sink.samples[0].stack_user, stack);
}

TEST(RecordParserTest, RegsUserValuesFollowTheMaskPopcount) {
  const SampleFormat f = DwarfFormat((1u << 6) | (1u << 7) | (1u << 8));
  RecordBytes r =
      SampleBuilder(f).RegsUser(PERF_SAMPLE_REGS_ABI_64, {0xa, 0xb, 0xc}).StackUser({}, 0).Build();
  RecordingSink sink;
  ASSERT_TRUE(Parse(r, f, sink).ok());
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_THAT(sink.samples[0].regs_user, ElementsAre(0xa, 0xb, 0xc));
}

TEST(RecordParserTest, StackUserSizeZeroHasNoDynSize) {
  const SampleFormat f = DwarfFormat(0x1);
  RecordBytes r = SampleBuilder(f).RegsUser(PERF_SAMPLE_REGS_ABI_64, {0x42}).StackUser({}, 0)
                      .Build();
  // header + ip tid time cpu period nr + abi reg + size: no dyn_size word.
  EXPECT_EQ(r.size(), 8u + 6 * 8 + 2 * 8 + 8);
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_EQ(sink.samples[0].view.stack_user_requested, 0u);
  EXPECT_THAT(sink.samples[0].stack_user, IsEmpty());
  EXPECT_THAT(sink.samples[0].regs_user, ElementsAre(0x42));
}

TEST(RecordParserTest, StackUserDynSizeBoundsTheCopy) {
  const SampleFormat f = DwarfFormat(0x1);
  std::vector<uint8_t> stack(64);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<uint8_t>(i);
  for (uint64_t dyn : {uint64_t{0}, uint64_t{8}, uint64_t{40}, uint64_t{64}, uint64_t{1000}}) {
    SCOPED_TRACE(dyn);
    RecordBytes r = SampleBuilder(f).RegsUser(PERF_SAMPLE_REGS_ABI_64, {1}).StackUser(stack, dyn)
                        .Build();
    RecordingSink sink;
    ASSERT_TRUE(Parse(r, f, sink).ok());
    ASSERT_EQ(sink.samples.size(), 1u);
    EXPECT_EQ(sink.samples[0].view.stack_user_requested, 64u);
    const size_t expect = std::min<uint64_t>(dyn, 64);
    EXPECT_THAT(sink.samples[0].stack_user, ElementsAreArray(stack.data(), expect));
  }
}

TEST(RecordParserTest, CallchainLongerThanTheRecordIsDataLoss) {
  const SampleFormat f = FramePointerFormat();
  RecordBytes r = SampleBuilder(f).Callchain({1, 2, 3}).Build();
  const uint64_t huge = uint64_t{1} << 61;  // nr * 8 overflows
  std::memcpy(r.data() + 8 + 5 * 8, &huge, 8);
  RecordingSink sink;
  EXPECT_EQ(Parse(r, f, sink).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(sink.total(), 0u);
}

// Every size a sample states is checked against the bytes left in the record before a view is
// made: none is trusted to size anything.
TEST(RecordParserTest, RawAndUserStackSizesBeyondTheRecordAreDataLoss) {
  SampleFormat f = DwarfFormat(0x1);
  f.sample_type |= PERF_SAMPLE_RAW;
  const std::vector<uint8_t> stack(64, 7);
  const RecordBytes good = SampleBuilder(f)
                               .Raw({1, 2, 3, 4})
                               .RegsUser(PERF_SAMPLE_REGS_ABI_64, {5})
                               .StackUser(stack, 64)
                               .Build();
  RecordingSink good_sink;
  ASSERT_TRUE(Parse(good, f, good_sink).ok());
  const size_t raw_at = 8 + 6 * 8;          // header, ip tid time cpu period, callchain nr
  const size_t stack_at = raw_at + 8 + 16;  // raw (u32 size + 4 bytes), abi, one register
  uint32_t raw_field = 0;
  uint64_t stack_field = 0;
  std::memcpy(&raw_field, good.data() + raw_at, 4);
  std::memcpy(&stack_field, good.data() + stack_at, 8);
  ASSERT_EQ(raw_field, 4u);
  ASSERT_EQ(stack_field, 64u);
  for (uint64_t stack_size : {uint64_t{72}, uint64_t{1} << 63, ~uint64_t{0}}) {
    RecordBytes r = good;
    std::memcpy(r.data() + stack_at, &stack_size, 8);
    RecordingSink sink;
    EXPECT_EQ(Parse(r, f, sink).status().code(), absl::StatusCode::kDataLoss) << stack_size;
    EXPECT_EQ(sink.total(), 0u);
  }
  for (uint32_t raw_size : {uint32_t{1000}, ~uint32_t{0}}) {
    RecordBytes r = good;
    std::memcpy(r.data() + raw_at, &raw_size, 4);
    RecordingSink sink;
    EXPECT_EQ(Parse(r, f, sink).status().code(), absl::StatusCode::kDataLoss) << raw_size;
    EXPECT_EQ(sink.total(), 0u);
  }
}

// PERF_SAMPLE_RAW's size is the kernel's padded size, so the u64 fields after it stay aligned. A
// record whose raw size breaks that alignment cannot come from the kernel; it must not hand out a
// misaligned span of u64 (reading through it is undefined behaviour).
TEST(RecordParserTest, MisalignedFieldsAfterRawAreRejected) {
  SampleFormat f = DwarfFormat(0x3);
  f.sample_type |= PERF_SAMPLE_RAW;
  RecordBytes r = SampleBuilder(f).Raw({1, 2, 3, 4}).RegsUser(PERF_SAMPLE_REGS_ABI_64, {5, 6})
                      .StackUser({}, 0).Build();
  // Raw block is u32 size=4 + 4 bytes. Rewrite size to 3 and re-pack the rest one byte earlier.
  const size_t raw_at = 8 + 6 * 8;  // header, ip tid time cpu period, callchain nr (empty)
  uint32_t raw_size;
  std::memcpy(&raw_size, r.data() + raw_at, 4);
  ASSERT_EQ(raw_size, 4u);
  raw_size = 3;
  std::memcpy(r.data() + raw_at, &raw_size, 4);
  r.erase(r.begin() + raw_at + 4 + 3);
  r.push_back(0);
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
  EXPECT_EQ(o.status().code(), absl::StatusCode::kDataLoss) << "misaligned regs_user delivered";
  EXPECT_EQ(sink.total(), 0u);
}

TEST(RecordParserTest, Mmap2DevInodeForm) {
  const SampleFormat f = FramePointerFormat();
  RecordBytes r = MmapBuilder(f)
                      .Pid(10)
                      .Tid(11)
                      .Start(0x7f0000001000)
                      .Len(0x3000)
                      .Pgoff(0x2000)
                      .Dev(8, 1)
                      .Inode(123456)
                      .InoGeneration(9)
                      .Prot(PROT_READ | PROT_EXEC)
                      .Flags(MAP_PRIVATE)
                      .Filename("/usr/lib/libc.so.6")
                      .Time(5555)
                      .Cpu(1)
                      .Build();
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(sink.mmaps.size(), 1u);
  const OwnedMmap& m = sink.mmaps[0];
  EXPECT_EQ(m.view.pid, 10u);
  EXPECT_EQ(m.view.tid, 11u);
  EXPECT_EQ(m.view.start_avma, 0x7f0000001000u);
  EXPECT_EQ(m.view.length, 0x3000u);
  EXPECT_EQ(m.view.file_offset, 0x2000u);
  EXPECT_EQ(m.view.dev_major, 8u);
  EXPECT_EQ(m.view.dev_minor, 1u);
  EXPECT_EQ(m.view.inode, 123456u);
  EXPECT_EQ(m.view.prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
  EXPECT_EQ(m.view.flags, static_cast<uint32_t>(MAP_PRIVATE));
  EXPECT_THAT(m.build_id, IsEmpty());
  EXPECT_EQ(m.filename, "/usr/lib/libc.so.6");
  EXPECT_TRUE(m.view.executable);
  EXPECT_EQ(m.view.time_ns, 5555u);
}

TEST(RecordParserTest, Mmap2BuildIdForm) {
  const SampleFormat f = FullIdFormat();
  std::vector<uint8_t> id20(20), id16(16);
  for (int i = 0; i < 20; ++i) id20[i] = static_cast<uint8_t>(0xa0 + i);
  for (int i = 0; i < 16; ++i) id16[i] = static_cast<uint8_t>(0x10 + i);
  for (const std::vector<uint8_t>& id : {id20, id16}) {
    RecordBytes r = MmapBuilder(f).Pid(1).Tid(1).Start(0x1000).Len(0x1000).BuildId(id)
                        .Prot(PROT_READ | PROT_EXEC).Flags(MAP_PRIVATE).Filename("/bin/x")
                        .Time(77).Build();
    RecordingSink sink;
    ASSERT_TRUE(Parse(r, f, sink).ok());
    ASSERT_EQ(sink.mmaps.size(), 1u);
    const OwnedMmap& m = sink.mmaps[0];
    EXPECT_EQ(m.build_id, id);
    EXPECT_EQ(m.view.dev_major, 0u);
    EXPECT_EQ(m.view.inode, 0u);
    EXPECT_EQ(m.view.prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
    EXPECT_EQ(m.view.flags, static_cast<uint32_t>(MAP_PRIVATE));
    EXPECT_EQ(m.filename, "/bin/x");
    EXPECT_EQ(m.view.time_ns, 77u);
  }
}

TEST(RecordParserTest, OldMmapAndDataMappings) {
  const SampleFormat f = FramePointerFormat();
  RecordBytes code = MmapBuilder(f).Mmap1().Pid(2).Start(0x400000).Len(0x1000).Filename("/a")
                         .Build();
  RecordBytes data = MmapBuilder(f).Data(true).Pid(2).Start(0x600000).Len(0x1000)
                         .Prot(PROT_READ | PROT_WRITE).Filename("/a").Build();
  RecordingSink sink;
  ASSERT_TRUE(Parse(code, f, sink).ok());
  ASSERT_TRUE(Parse(data, f, sink).ok());
  ASSERT_EQ(sink.mmaps.size(), 2u);
  EXPECT_TRUE(sink.mmaps[0].view.executable);
  EXPECT_EQ(sink.mmaps[0].view.prot, static_cast<uint32_t>(PROT_EXEC));
  EXPECT_EQ(sink.mmaps[0].filename, "/a");
  EXPECT_FALSE(sink.mmaps[1].view.executable);
  EXPECT_EQ(sink.mmaps[1].view.prot, static_cast<uint32_t>(PROT_READ | PROT_WRITE));
}

TEST(RecordParserTest, FilenameNulHandling) {
  const SampleFormat f = FramePointerFormat();
  struct Case {
    std::string bytes;
    std::string expect;
  };
  for (const Case& c : {Case{"", ""}, Case{"abcdefg", "abcdefg"},
                        Case{std::string("ab\0cdefg", 8), "ab"},
                        Case{"abcdefgh", "abcdefgh"},  // no NUL at all: bounded by the trailer
                        Case{"[vdso]", "[vdso]"}}) {
    SCOPED_TRACE(c.expect);
    RecordBytes r = MmapBuilder(f).Start(0x1000).Len(0x1000).FilenameBytes(c.bytes).Time(3)
                        .Build();
    RecordingSink sink;
    ASSERT_TRUE(Parse(r, f, sink).ok());
    ASSERT_EQ(sink.mmaps.size(), 1u);
    EXPECT_EQ(sink.mmaps[0].filename, c.expect);
    EXPECT_EQ(sink.mmaps[0].view.time_ns, 3u) << "trailer read from the wrong place";
  }
}

TEST(RecordParserTest, CommExecAndRename) {
  const SampleFormat f = FullIdFormat();
  RecordBytes exec = CommBuilder(f).Pid(5).Tid(5).Comm("worker").Exec(true).Time(10).Build();
  RecordBytes rename = CommBuilder(f).Pid(5).Tid(6).Comm("a-fifteen-chars").Time(11).Build();
  RecordingSink sink;
  ASSERT_TRUE(Parse(exec, f, sink).ok());
  ASSERT_TRUE(Parse(rename, f, sink).ok());
  ASSERT_EQ(sink.comms.size(), 2u);
  EXPECT_EQ(sink.comms[0].comm, "worker");
  EXPECT_TRUE(sink.comms[0].view.exec);
  EXPECT_EQ(sink.comms[0].view.pid, 5u);
  EXPECT_EQ(sink.comms[0].view.tid, 5u);
  EXPECT_EQ(sink.comms[0].view.time_ns, 10u);
  EXPECT_EQ(sink.comms[1].comm, "a-fifteen-chars");
  EXPECT_FALSE(sink.comms[1].view.exec);
  EXPECT_EQ(sink.comms[1].view.tid, 6u);
  EXPECT_EQ(sink.comms[1].view.time_ns, 11u);
}

TEST(RecordParserTest, ForkAndExit) {
  const SampleFormat f = FramePointerFormat();
  RecordBytes fork = ForkBuilder(f).Pid(20).Ppid(10).Tid(20).Ptid(11).Time(100).Build();
  RecordBytes exit = ExitBuilder(f).Pid(20).Ppid(10).Tid(21).Ptid(10).Time(200).Build();
  RecordingSink sink;
  ASSERT_TRUE(Parse(fork, f, sink).ok());
  ASSERT_TRUE(Parse(exit, f, sink).ok());
  ASSERT_EQ(sink.tasks.size(), 2u);
  EXPECT_FALSE(sink.tasks[0].exit);
  EXPECT_EQ(sink.tasks[0].pid, 20u);
  EXPECT_EQ(sink.tasks[0].ppid, 10u);
  EXPECT_EQ(sink.tasks[0].tid, 20u);
  EXPECT_EQ(sink.tasks[0].ptid, 11u);
  EXPECT_EQ(sink.tasks[0].time_ns, 100u);
  EXPECT_TRUE(sink.tasks[1].exit);
  EXPECT_EQ(sink.tasks[1].tid, 21u);
  EXPECT_EQ(sink.tasks[1].time_ns, 200u);
}

// The preload's free records are a type of their own, parsed as the free sample they stand for,
// whatever the session's sample layout.
RecordBytes FreeRecordBytes(uint16_t misc, uint16_t size) {
  alloc_channel::FreeRecord r{};
  r.header = {alloc_channel::kFreeRecordType, misc, size};
  r.time_ns = 5000;
  r.pid = 7;
  r.tid = 9;
  r.addr = 0x7f0000001230;
  RecordBytes bytes(sizeof(r));
  std::memcpy(bytes.data(), &r, sizeof(r));
  bytes.resize(size);
  return bytes;
}

TEST(RecordParserTest, FreeRecordIsTheSampleOfAFree) {
  for (const SampleFormat& f : {DwarfFormat(0xff), FramePointerFormat()}) {
    for (const bool temporary : {false, true}) {
      const RecordBytes r = FreeRecordBytes(
          temporary ? alloc_channel::kFreeRecordTemporary : 0, sizeof(alloc_channel::FreeRecord));
      RecordingSink sink;
      absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
      ASSERT_TRUE(o.ok()) << o.status();
      EXPECT_EQ(*o, ParseOutcome::kDelivered);
      ASSERT_EQ(sink.samples.size(), 1u);
      const SampleView& s = sink.samples[0].view;
      EXPECT_EQ(s.id, alloc_channel::kFreeSampleId);
      EXPECT_EQ(s.pid, 7u);
      EXPECT_EQ(s.tid, 9u);
      EXPECT_EQ(s.time_ns, 5000u);
      EXPECT_EQ(s.addr, 0x7f0000001230u);
      EXPECT_EQ(s.period, temporary ? alloc_channel::kFreeTemporary : 0u);
      EXPECT_EQ(sink.total(), 1u);
      EXPECT_EQ(RecordTime(r, f), 5000u);
    }
  }
  // A peak mark is one of its kind, handed on with the peak's bytes in addr.
  {
    const RecordBytes mark =
        FreeRecordBytes(alloc_channel::kFreeRecordPeak, sizeof(alloc_channel::FreeRecord));
    RecordingSink sink;
    ASSERT_TRUE(Parse(mark, DwarfFormat(0xff), sink).ok());
    ASSERT_EQ(sink.samples.size(), 1u);
    EXPECT_EQ(sink.samples[0].view.id, alloc_channel::kPeakMarkSampleId);
    EXPECT_EQ(sink.samples[0].view.addr, 0x7f0000001230u);
    EXPECT_EQ(sink.samples[0].view.time_ns, 5000u);
  }
  // One that says it is shorter than a FreeRecord is cut off: no sample, no time.
  const RecordBytes cut = FreeRecordBytes(0, 24);
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(cut, DwarfFormat(0xff), sink);
  EXPECT_TRUE(absl::IsDataLoss(o.status())) << o.status();
  EXPECT_EQ(sink.total(), 0u);
  EXPECT_EQ(RecordTime(FreeRecordBytes(0, 8), DwarfFormat(0xff)), 0u);
}

// A batch of frees (kFreeRecordBatch): `addr` and the u64s after it, each a free of its own at
// the batch's time, its low bits the temporary flag and the writer's (never part of the address).
TEST(RecordParserTest, FreeBatchIsTheSampleOfEachFree) {
  const uint64_t entries[] = {0x7f0000001230 | alloc_channel::kFreeEntryTemporary,
                              0x7f0000002000 | 2, 0x7f0000003010};
  RecordBytes r = FreeRecordBytes(alloc_channel::kFreeRecordBatch,
                                  offsetof(alloc_channel::FreeRecord, addr) + sizeof(entries));
  std::memcpy(r.data() + offsetof(alloc_channel::FreeRecord, addr), entries, sizeof(entries));
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, DwarfFormat(0xff), sink);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(sink.samples.size(), 3u);
  const uint64_t want[] = {0x7f0000001230, 0x7f0000002000, 0x7f0000003010};
  for (size_t i = 0; i < 3; ++i) {
    const SampleView& s = sink.samples[i].view;
    EXPECT_EQ(s.id, alloc_channel::kFreeSampleId);
    EXPECT_EQ(s.pid, 7u);
    EXPECT_EQ(s.tid, 9u);
    EXPECT_EQ(s.time_ns, 5000u);
    EXPECT_EQ(s.addr, want[i]);
    EXPECT_EQ(s.period, i == 0 ? alloc_channel::kFreeTemporary : 0u);
  }
  EXPECT_EQ(RecordTime(r, DwarfFormat(0xff)), 5000u);
  // Bytes short of a whole entry at the end are no free.
  RecordBytes ragged = FreeRecordBytes(alloc_channel::kFreeRecordBatch,
                                       sizeof(alloc_channel::FreeRecord) + 4);
  RecordingSink one;
  ASSERT_TRUE(Parse(ragged, DwarfFormat(0xff), one).ok());
  EXPECT_EQ(one.samples.size(), 1u);
}

// The layout of `stat --per-thread`'s side-band records.
SampleFormat CountingFormat() { return CounterSidebandFormat(); }

TEST(RecordParserTest, ReadRecordCarriesTheFieldsOfItsReadFormat) {
  const SampleFormat f = CountingFormat();
  RecordingSink sink;
  RecordBytes read =
      ReadBuilder(f).Pid(10).Tid(11).Value(500).Enabled(70).Running(60).EventId(42).Time(99)
          .Build();
  absl::StatusOr<ParseOutcome> o = Parse(read, f, sink);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(*o, ParseOutcome::kDelivered);
  ASSERT_EQ(sink.reads.size(), 1u);
  EXPECT_EQ(sink.reads[0].pid, 10u);
  EXPECT_EQ(sink.reads[0].tid, 11u);
  EXPECT_EQ(sink.reads[0].value, 500u);
  EXPECT_EQ(sink.reads[0].time_enabled, 70u);
  EXPECT_EQ(sink.reads[0].time_running, 60u);
  EXPECT_EQ(sink.reads[0].id, 42u);
  EXPECT_EQ(sink.reads[0].time_ns, 99u);
  EXPECT_EQ(RecordTime(read, f), 99u);

  // Without times or id only the value is there; PERF_FORMAT_LOST follows the id.
  SampleFormat bare = f;
  bare.read_format = PERF_FORMAT_LOST;
  RecordingSink bare_sink;
  ASSERT_TRUE(Parse(ReadBuilder(bare).Value(7).Build(), bare, bare_sink).ok());
  ASSERT_EQ(bare_sink.reads.size(), 1u);
  EXPECT_EQ(bare_sink.reads[0].value, 7u);
  EXPECT_EQ(bare_sink.reads[0].id, 0u);

  // Group reads are not a layout nativeprof opens.
  SampleFormat group = f;
  group.read_format |= PERF_FORMAT_GROUP;
  RecordingSink group_sink;
  o = Parse(read, group, group_sink);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, ParseOutcome::kIgnored);
  EXPECT_EQ(group_sink.total(), 0u);
}

TEST(RecordParserTest, ConsistentTaskRecordsNameTheirWriterInTheTrailer) {
  const SampleFormat f = CountingFormat();
  EXPECT_TRUE(IsConsistentTaskRecord(ReadBuilder(f).Pid(1).Tid(2).Build(), f));
  EXPECT_FALSE(
      IsConsistentTaskRecord(ReadBuilder(f).Pid(1).Tid(2).TrailerPidTid(1, 3).Build(), f));
  EXPECT_TRUE(IsConsistentTaskRecord(CommBuilder(f).Pid(1).Tid(2).Comm("x").Build(), f));
  // FORK is written by the creator (ptid), EXIT by the task that exits (tid).
  EXPECT_TRUE(IsConsistentTaskRecord(
      ForkBuilder(f).Pid(1).Tid(5).Ptid(2).TrailerPidTid(1, 2).Build(), f));
  EXPECT_FALSE(IsConsistentTaskRecord(ForkBuilder(f).Pid(1).Tid(5).Ptid(2).Build(), f));
  EXPECT_TRUE(IsConsistentTaskRecord(ExitBuilder(f).Pid(1).Tid(5).Ptid(2).Build(), f));
  // Other types, short records and formats without a tid in the trailer are never trusted.
  EXPECT_FALSE(IsConsistentTaskRecord(LostBuilder(f).Lost(1).Build(), f));
  RecordBytes cut = ReadBuilder(f).Pid(1).Tid(2).Build();
  EXPECT_FALSE(IsConsistentTaskRecord(std::span<const uint8_t>(cut.data(), 16), f));
  SampleFormat no_tid = f;
  no_tid.sample_type = PERF_SAMPLE_TIME;
  EXPECT_FALSE(IsConsistentTaskRecord(ReadBuilder(no_tid).Pid(1).Tid(2).Build(), no_tid));
}

TEST(RecordParserTest, LostThrottleAndUnknown) {
  const SampleFormat f = FullIdFormat();
  RecordingSink sink;
  ASSERT_TRUE(Parse(LostBuilder(f).EventId(4).Lost(17).Time(1).Build(), f, sink).ok());
  ASSERT_TRUE(Parse(LostBuilder(f).SamplesOnly().Lost(3).Time(2).Build(), f, sink).ok());
  ASSERT_TRUE(Parse(ThrottleBuilder(true, f).Time(30).Build(), f, sink).ok());
  ASSERT_TRUE(Parse(ThrottleBuilder(false, f).Time(31).Build(), f, sink).ok());
  ASSERT_EQ(sink.losts.size(), 2u);
  EXPECT_EQ(sink.losts[0].lost, 17u);
  EXPECT_FALSE(sink.losts[0].samples_only);
  EXPECT_EQ(sink.losts[1].lost, 3u);
  EXPECT_TRUE(sink.losts[1].samples_only);
  ASSERT_EQ(sink.throttles.size(), 2u);
  EXPECT_TRUE(sink.throttles[0].throttled);
  EXPECT_EQ(sink.throttles[0].time_ns, 30u);
  EXPECT_FALSE(sink.throttles[1].throttled);

  testing::RecordWriter w(PERF_RECORD_NAMESPACES, 0);
  for (int i = 0; i < 6; ++i) w.U64(0);  // the sample_id trailer of FullIdFormat
  RecordBytes unknown = w.Finish();
  absl::StatusOr<ParseOutcome> o = Parse(unknown, f, sink);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, ParseOutcome::kIgnored);
  EXPECT_EQ(sink.total(), 4u);
}

TEST(RecordParserTest, SwitchRecordsSayWhoWhenAndWhetherPreempted) {
  const SampleFormat f = FullIdFormat();
  RecordingSink sink;
  ASSERT_TRUE(Parse(testing::SwitchBuilder(/*out=*/true, /*preempted=*/false, f)
                        .TrailerPidTid(7, 8).Time(100).Build(), f, sink).ok());
  ASSERT_TRUE(Parse(testing::SwitchBuilder(/*out=*/true, /*preempted=*/true, f)
                        .TrailerPidTid(7, 9).Time(101).Build(), f, sink).ok());
  ASSERT_TRUE(Parse(testing::SwitchBuilder(/*out=*/false, false, f)
                        .TrailerPidTid(7, 8).Time(150).Build(), f, sink).ok());
  ASSERT_EQ(sink.switches.size(), 3u);
  EXPECT_TRUE(sink.switches[0].out);
  EXPECT_FALSE(sink.switches[0].preempted);
  EXPECT_EQ(sink.switches[0].pid, 7u);
  EXPECT_EQ(sink.switches[0].tid, 8u);
  EXPECT_EQ(sink.switches[0].time_ns, 100u);
  EXPECT_TRUE(sink.switches[1].preempted);
  EXPECT_EQ(sink.switches[1].tid, 9u);
  EXPECT_FALSE(sink.switches[2].out);
  EXPECT_EQ(sink.switches[2].time_ns, 150u);
  // Without sample_id_all nothing says whose switch it was: not delivered.
  SampleFormat bare = f;
  bare.sample_id_all = false;
  absl::StatusOr<ParseOutcome> o =
      Parse(testing::SwitchBuilder(true, false, bare).Build(), bare, sink);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, ParseOutcome::kIgnored);
}

TEST(RecordParserTest, SampleIdentifierTellsTheEvent) {
  const SampleFormat f = FullIdFormat();
  RecordingSink sink;
  ASSERT_TRUE(Parse(SampleBuilder(f).Identifier(0xabc).Ip(5).Tid(3).Time(9).Build(), f, sink).ok());
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_EQ(sink.samples[0].view.id, 0xabcu);
  EXPECT_EQ(sink.samples[0].view.ip, 5u);
  EXPECT_EQ(sink.samples[0].view.event, SampleEvent::kSampling);
}

// A held copy of a sample drops the stack bytes past dyn_size and parses to the same sample.
TEST(RecordParserTest, CompactedSampleKeepsItsStackAndWhetherItWasTruncated) {
  const SampleFormat f = testing::DwarfFormat(0x3);
  std::vector<uint8_t> stack(512);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<uint8_t>(i);
  for (uint64_t dyn : {uint64_t{37}, uint64_t{512}}) {
    SCOPED_TRACE(dyn);
    const RecordBytes r = SampleBuilder(f).Pid(1).Tid(2).Time(3).Ip(4)
                              .Callchain({static_cast<uint64_t>(PERF_CONTEXT_USER), 4})
                              .RegsUser(PERF_SAMPLE_REGS_ABI_64, {10, 11})
                              .StackUser(stack, dyn).Build();
    std::vector<uint64_t> out((r.size() + 7) / 8);
    const size_t size = CompactSample(r, f, reinterpret_cast<uint8_t*>(out.data()));
    EXPECT_EQ(size, CompactSample(r, f, nullptr));
    if (dyn < stack.size()) EXPECT_LT(size, r.size() - 400);
    RecordingSink a, b;
    ASSERT_TRUE(Parse(r, f, a).ok());
    ASSERT_TRUE(ParseRecord(std::span<const uint8_t>(
                                reinterpret_cast<const uint8_t*>(out.data()), size),
                            f, b).ok());
    ASSERT_EQ(a.samples.size(), 1u);
    ASSERT_EQ(b.samples.size(), 1u);
    EXPECT_EQ(a.samples[0].stack_user, b.samples[0].stack_user);
    EXPECT_EQ(a.samples[0].regs_user, b.samples[0].regs_user);
    EXPECT_EQ(a.samples[0].callchain, b.samples[0].callchain);
    EXPECT_EQ(a.samples[0].view.time_ns, b.samples[0].view.time_ns);
    // "Maybe truncated" (dyn_size == the size asked for) survives the cut either way.
    EXPECT_EQ(a.samples[0].stack_user.size() == a.samples[0].view.stack_user_requested,
              b.samples[0].stack_user.size() == b.samples[0].view.stack_user_requested);
  }
  // Not a sample: copied whole.
  const RecordBytes comm = CommBuilder(f).Pid(1).Tid(1).Comm("x").Build();
  EXPECT_EQ(CompactSample(comm, f, nullptr), comm.size());
}

TEST(RecordParserTest, BranchStackSamplesAreIgnored) {
  SampleFormat f = FramePointerFormat();
  f.sample_type |= PERF_SAMPLE_BRANCH_STACK;
  RecordBytes r = SampleBuilder(f).Ip(1).Build();
  RecordingSink sink;
  absl::StatusOr<ParseOutcome> o = Parse(r, f, sink);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, ParseOutcome::kIgnored);
  EXPECT_EQ(sink.total(), 0u);
}

TEST(RecordParserTest, WithoutSampleIdAllThereIsNoTrailer) {
  SampleFormat f = FramePointerFormat();
  f.sample_id_all = false;
  RecordBytes r = MmapBuilder(f).Pid(3).Start(0x1000).Len(0x2000).Filename("/lib/x.so").Time(9)
                      .Build();
  RecordingSink sink;
  ASSERT_TRUE(Parse(r, f, sink).ok());
  ASSERT_EQ(sink.mmaps.size(), 1u);
  EXPECT_EQ(sink.mmaps[0].filename, "/lib/x.so");
  EXPECT_EQ(sink.mmaps[0].view.time_ns, 0u);
  EXPECT_EQ(RecordTime(r, f), 0u);
}

// Every valid record of each kind, cut at every length: with the original header (size larger
// than the bytes) it is kDataLoss; with the header's size rewritten to the cut length it is
// kDataLoss or a clean parse - never a crash or an out-of-bounds read - and a cut sample is
// always kDataLoss because all its fields are mandatory.
TEST(RecordParserTest, EveryTruncationIsDataLossOrAParse) {
  const SampleFormat fp = FullIdFormat();
  SampleFormat dw = DwarfFormat(0x7);
  dw.sample_type |= PERF_SAMPLE_RAW | PERF_SAMPLE_READ;
  dw.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
  struct Case {
    RecordBytes bytes;
    SampleFormat format;
  };
  std::vector<Case> cases = {
      {SampleBuilder(fp).Pid(1).Tid(2).Ip(3).Callchain({kContextUser, 4, 5}).Build(), fp},
      {SampleBuilder(dw).Ip(3).ReadValues({1, 2}).Raw({9, 9, 9})
           .RegsUser(PERF_SAMPLE_REGS_ABI_64, {1, 2, 3}).StackUser(std::vector<uint8_t>(24, 7), 16)
           .Build(), dw},
      {MmapBuilder(fp).Start(0x1000).Len(0x1000).Dev(1, 2).Inode(3).Filename("/lib/libfoo.so")
           .Build(), fp},
      {MmapBuilder(fp).Start(0x1000).Len(0x1000).BuildId(std::vector<uint8_t>(20, 1))
           .Filename("/x").Build(), fp},
      {CommBuilder(fp).Pid(1).Tid(1).Comm("name").Exec(true).Build(), fp},
      {ForkBuilder(fp).Pid(1).Ppid(2).Build(), fp},
      {ExitBuilder(fp).Pid(1).Ppid(2).Build(), fp},
      {LostBuilder(fp).Lost(5).Build(), fp},
      {LostBuilder(fp).SamplesOnly().Lost(5).Build(), fp},
      {ThrottleBuilder(true, fp).Time(5).Build(), fp},
      {ReadBuilder(CountingFormat()).Pid(1).Tid(2).Value(3).Enabled(4).Running(5).EventId(6)
           .Time(7).Build(), CountingFormat()},
  };
  for (const Case& c : cases) {
    const uint32_t type = reinterpret_cast<const perf_event_header*>(c.bytes.data())->type;
    for (size_t n = 0; n < c.bytes.size(); ++n) {
      SCOPED_TRACE(::testing::Message() << "type " << type << " cut at " << n);
      RecordingSink sink;
      absl::StatusOr<ParseOutcome> o =
          ParseRecord(std::span<const uint8_t>(c.bytes.data(), n), c.format, sink);
      EXPECT_EQ(o.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_EQ(sink.total(), 0u);
      EXPECT_EQ(RecordTime(std::span<const uint8_t>(c.bytes.data(), n), c.format), 0u);

      if (n < sizeof(perf_event_header)) continue;
      RecordBytes cut(c.bytes.begin(), c.bytes.begin() + n);
      const uint16_t size = static_cast<uint16_t>(n);
      std::memcpy(cut.data() + 6, &size, 2);
      RecordingSink cut_sink;
      o = Parse(cut, c.format, cut_sink);
      if (o.ok()) {
        EXPECT_NE(type, static_cast<uint32_t>(PERF_RECORD_SAMPLE));
        EXPECT_EQ(cut_sink.total(), *o == ParseOutcome::kDelivered ? 1u : 0u);
      } else {
        EXPECT_EQ(o.status().code(), absl::StatusCode::kDataLoss) << o.status();
        EXPECT_EQ(cut_sink.total(), 0u);
      }
      (void)RecordTime(cut, c.format);
    }
    RecordingSink whole;
    ASSERT_TRUE(Parse(c.bytes, c.format, whole).ok()) << "type " << type;
    EXPECT_EQ(whole.total(), 1u);
  }
}

TEST(RecordParserTest, MisalignedInputIsInvalidArgument) {
  const SampleFormat f = FramePointerFormat();
  RecordBytes r = SampleBuilder(f).Ip(1).Build();
  for (size_t shift : {1, 4, 7}) {
    std::vector<uint64_t> storage(r.size() / 8 + 2);
    uint8_t* p = reinterpret_cast<uint8_t*>(storage.data()) + shift;
    std::memcpy(p, r.data(), r.size());
    RecordingSink sink;
    absl::StatusOr<ParseOutcome> o = ParseRecord(std::span<const uint8_t>(p, r.size()), f, sink);
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument) << shift;
    EXPECT_EQ(sink.total(), 0u);
  }
}

TEST(RecordParserTest, RecordTimeOfSamplesAndNonSamples) {
  const SampleFormat fp = FramePointerFormat();
  EXPECT_EQ(RecordTime(SampleBuilder(fp).Ip(1).Pid(2).Tid(3).Time(4242).Build(), fp), 4242u);
  EXPECT_EQ(RecordTime(MmapBuilder(fp).Filename("/x").Time(17).Build(), fp), 17u);
  EXPECT_EQ(RecordTime(CommBuilder(fp).Comm("c").Time(18).Build(), fp), 18u);
  EXPECT_EQ(RecordTime(ForkBuilder(fp).Time(19).Build(), fp), 19u);
  EXPECT_EQ(RecordTime(LostBuilder(fp).Lost(1).Time(20).Build(), fp), 20u);

  const SampleFormat full = FullIdFormat();
  EXPECT_EQ(RecordTime(SampleBuilder(full).Identifier(99).Ip(1).Time(4243).Build(), full), 4243u);
  EXPECT_EQ(RecordTime(MmapBuilder(full).Filename("/x").Time(21).Id(5).Cpu(1).Build(), full),
            21u);

  SampleFormat no_time = fp;
  no_time.sample_type &= ~static_cast<uint64_t>(PERF_SAMPLE_TIME);
  EXPECT_EQ(RecordTime(SampleBuilder(no_time).Ip(1).Build(), no_time), 0u);
  EXPECT_EQ(RecordTime(MmapBuilder(no_time).Filename("/x").Build(), no_time), 0u);

  SampleFormat no_id_all = fp;
  no_id_all.sample_id_all = false;
  EXPECT_EQ(RecordTime(SampleBuilder(no_id_all).Time(5).Build(), no_id_all), 5u);
  EXPECT_EQ(RecordTime(CommBuilder(no_id_all).Comm("c").Time(6).Build(), no_id_all), 0u);
}

}  // namespace
}  // namespace nativeprof::sampler
