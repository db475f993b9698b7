#include "sampler/alloc_stack_decoder.h"

#include <asm/perf_regs.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/alloc_channel_layout.h"

namespace nativeprof::sampler {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// bp, sp, ip: sp is regs_user[1].
constexpr uint64_t kRegsMask = uint64_t{1} << PERF_REG_X86_BP | uint64_t{1} << PERF_REG_X86_SP |
                               uint64_t{1} << PERF_REG_X86_IP;
constexpr uint32_t kStackBytes = 8192;

// One allocation record as the session parses it: the registers and the stack field's data.
struct Record {
  uint64_t id;
  uint32_t tid = 7;
  uint64_t regs[3] = {0, 0, 0x401000};
  std::vector<uint64_t> data;

  SampleView View() const {
    SampleView s;
    s.id = id;
    s.pid = 5;
    s.tid = tid;
    if (id == alloc_channel::kAllocSampleId) {
      s.regs_abi = PERF_SAMPLE_REGS_ABI_64;
      s.regs_user = regs;
    }
    s.stack_user = {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 8};
    s.stack_user_requested = s.stack_user.size();
    return s;
  }
};

Record Whole(uint64_t sp, std::vector<uint64_t> words) {
  Record r{.id = alloc_channel::kAllocSampleId};
  r.regs[1] = sp;
  r.data = std::move(words);
  return r;
}

// `runs` as (first word, its values).
// `sequence`: 1 for the first delta after a whole record.
Record Delta(uint64_t sp, size_t words,
             std::vector<std::pair<uint32_t, std::vector<uint64_t>>> runs,
             uint32_t sequence = 1) {
  // A delta's registers are in its stack field, after the copy's size: bp, sp, ip.
  Record r{.id = alloc_channel::kAllocDeltaSampleId};
  r.data = {words * 8 | uint64_t{sequence} << 32, 0x7ff0, sp, 0x401234};
  for (const auto& [at, values] : runs) {
    r.data.push_back(uint64_t{static_cast<uint32_t>(values.size())} << 32 | at);
    r.data.insert(r.data.end(), values.begin(), values.end());
  }
  return r;
}

// `record` as the session hands it on once the decoder has seen it; the view points into
// `record` and the decoder's copies.
SampleView Decode(AllocStackDecoder& decoder, const Record& record) {
  SampleView s = record.View();
  decoder.OnAlloc(s);
  return s;
}

std::vector<uint64_t> Words(const SampleView& s) {
  std::vector<uint64_t> out(s.stack_user.size() / 8);
  std::memcpy(out.data(), s.stack_user.data(), out.size() * 8);
  return out;
}

TEST(AllocStackDecoderTest, AppliesRunsToTheThreadsLastCopy) {
  AllocStackDecoder decoder(kRegsMask, kStackBytes);
  const Record whole_record = Whole(0x7000, {1, 2, 3, 4, 5});
  SampleView whole = Decode(decoder, whole_record);
  EXPECT_THAT(Words(whole), ElementsAre(1, 2, 3, 4, 5));

  const Record d = Delta(0x7000, 5, {{1, {20}}, {3, {40, 50}}});
  SampleView delta = Decode(decoder, d);
  EXPECT_THAT(Words(delta), ElementsAre(1, 20, 3, 40, 50));
  // What the whole record would have said.
  EXPECT_EQ(delta.stack_user_requested, 40u);
  EXPECT_EQ(delta.regs_abi, uint64_t{PERF_SAMPLE_REGS_ABI_64});
  EXPECT_THAT(delta.regs_user, ElementsAre(0x7ff0, 0x7000, 0x401234));

  // The next delta builds on the rebuilt copy, not on the first.
  const Record d2 = Delta(0x7000, 5, {{0, {10}}}, 2);
  SampleView delta2 = Decode(decoder, d2);
  EXPECT_THAT(Words(delta2), ElementsAre(10, 20, 3, 40, 50));
  EXPECT_EQ(decoder.undecodable(), 0u);
}

TEST(AllocStackDecoderTest, AMovedSpKeepsTheWordsAtTheSameAddresses) {
  AllocStackDecoder decoder(kRegsMask, kStackBytes);
  const Record whole_record = Whole(0x7000, {1, 2, 3, 4});
  SampleView whole = Decode(decoder, whole_record);
  // Two words deeper, and one word less high: the two new low words come as a run.
  const Record deeper = Delta(0x6ff0, 5, {{0, {8, 9}}});
  SampleView d = Decode(decoder, deeper);
  EXPECT_THAT(Words(d), ElementsAre(8, 9, 1, 2, 3));
  // Shallower again, past the old top: the word above comes as a run.
  const Record shallower = Delta(0x7008, 4, {{3, {77}}}, 2);
  SampleView s = Decode(decoder, shallower);
  EXPECT_THAT(Words(s), ElementsAre(2, 3, 0, 77)) << "0x7018 held nothing: zero, not stale";
  EXPECT_EQ(decoder.undecodable(), 0u);
}

TEST(AllocStackDecoderTest, ADeltaWithoutACopyHasNoStack) {
  AllocStackDecoder decoder(kRegsMask, kStackBytes);
  const Record d = Delta(0x7000, 2, {{0, {1}}});
  SampleView s = Decode(decoder, d);
  EXPECT_THAT(s.stack_user, IsEmpty());
  EXPECT_EQ(decoder.undecodable(), 1u);

  // Another thread's copy is not this one's; an exited thread's copy is gone.
  const Record whole_record = Whole(0x7000, {1, 2});
  SampleView whole = Decode(decoder, whole_record);
  Record other = Delta(0x7000, 2, {{0, {1}}});
  other.tid = 8;
  SampleView o = Decode(decoder, other);
  EXPECT_EQ(decoder.undecodable(), 2u);
  decoder.OnThreadExit(5, 7);
  SampleView again = Decode(decoder, d);
  EXPECT_EQ(decoder.undecodable(), 3u);
}

TEST(AllocStackDecoderTest, AGapInTheSequenceDropsTheCopyUntilTheNextWholeRecord) {
  AllocStackDecoder decoder(kRegsMask, kStackBytes);
  const Record whole_record = Whole(0x7000, {1, 2});
  SampleView whole = Decode(decoder, whole_record);
  const Record first = Delta(0x7000, 2, {{0, {5}}}, 1);
  SampleView s1 = Decode(decoder, first);
  EXPECT_THAT(Words(s1), ElementsAre(5, 2));
  // Delta 2 went missing: 3 cannot be applied, and 4 neither.
  const Record third = Delta(0x7000, 2, {{1, {7}}}, 3);
  SampleView s3 = Decode(decoder, third);
  EXPECT_THAT(s3.stack_user, IsEmpty());
  const Record fourth = Delta(0x7000, 2, {{1, {8}}}, 4);
  SampleView s4 = Decode(decoder, fourth);
  EXPECT_THAT(s4.stack_user, IsEmpty());
  EXPECT_EQ(decoder.undecodable(), 2u);
  // A whole record starts over.
  const Record again_record = Whole(0x7000, {3, 4});
  SampleView again = Decode(decoder, again_record);
  SampleView s5 = Decode(decoder, first);
  EXPECT_THAT(Words(s5), ElementsAre(5, 4));
}

TEST(AllocStackDecoderTest, ABadDeltaDropsTheCopy) {
  AllocStackDecoder decoder(kRegsMask, kStackBytes);
  for (const Record& bad : {Delta(0x7000, 3, {{2, {1, 2}}}),         // a run past the copy
                            Delta(0x7000, kStackBytes / 8 + 1, {}),  // more than a copy holds
                            Delta(0x7004, 3, {})}) {                 // sp off the words
    const Record whole_record = Whole(0x7000, {1, 2, 3});
    SampleView whole = Decode(decoder, whole_record);
    SampleView s = Decode(decoder, bad);
    EXPECT_THAT(s.stack_user, IsEmpty());
    // The thread's copy went with it: nothing builds on what may be half-applied.
    const Record good = Delta(0x7000, 3, {});
    SampleView next = Decode(decoder, good);
    EXPECT_THAT(next.stack_user, IsEmpty());
  }
  EXPECT_EQ(decoder.undecodable(), 6u);
}

TEST(AllocStackDecoderTest, AWholeCopyOfPartialWordsIsNoBase) {
  AllocStackDecoder decoder(kRegsMask, kStackBytes);
  Record odd = Whole(0x7000, {1, 2});
  SampleView whole = odd.View();
  whole.stack_user = whole.stack_user.first(12);
  decoder.OnAlloc(whole);
  EXPECT_THAT(whole.stack_user, ::testing::SizeIs(12));  // a whole record is left as it is
  const Record d = Delta(0x7000, 2, {});
  SampleView s = Decode(decoder, d);
  EXPECT_THAT(s.stack_user, IsEmpty());
}

}  // namespace
}  // namespace nativeprof::sampler
