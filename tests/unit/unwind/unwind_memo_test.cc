// The unwind memo must give exactly what a walk gives: checked over the recorded samples of the
// -O2 -fomit-frame-pointer fixture (frame-pointer fallback, signal frames, PLT expressions and
// truncated copies among them), and for the changes that must make it walk again.
#include "unwind/unwind_memo.h"

#include <cstring>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/test_support.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/sample_fixture.h"

namespace nativeprof::unwind {
namespace {

std::unique_ptr<LoadedFixture> LoadWorkload() {
  auto f = LoadedFixture::Load(nativeprof::testing::SourcePath("tests/testdata/unwind/nofp_workload"));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : nullptr;
}

void ExpectSameStack(const UnwoundStack& want, const UnwoundStack& got, size_t sample) {
  ASSERT_EQ(want.frames.size(), got.frames.size()) << "sample " << sample;
  for (size_t i = 0; i < want.frames.size(); ++i) {
    EXPECT_EQ(want.frames[i].avma, got.frames[i].avma) << "sample " << sample << " frame " << i;
    EXPECT_EQ(want.frames[i].kind, got.frames[i].kind) << "sample " << sample << " frame " << i;
    EXPECT_EQ(want.frames[i].kernel, got.frames[i].kernel) << "sample " << sample;
  }
  EXPECT_EQ(want.end, got.end) << "sample " << sample;
  EXPECT_EQ(want.stack_high, got.stack_high) << "sample " << sample;
  EXPECT_EQ(want.spliced, got.spliced) << "sample " << sample;
}

TEST(UnwindMemoTest, AReplayIsExactlyTheWalk) {
  auto fixture = LoadWorkload();
  ASSERT_NE(fixture, nullptr);
  const auto& samples = fixture->data().samples;
  DwarfUnwinder walker({.regs_mask = fixture->data().regs_mask, .memoize = false});
  DwarfUnwinder memo({.regs_mask = fixture->data().regs_mask});
  UnwoundStack want, first, again;
  // A replay names its entry (UnwoundStack::replayed_from) only when the entry gave every frame:
  // one id, one list of frames.
  std::map<uint64_t, std::vector<uint64_t>> frames_of_entry;
  size_t named = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    walker.Unwind(samples[i].View(), fixture->process(), &want);
    memo.Unwind(samples[i].View(), fixture->process(), &first);
    memo.Unwind(samples[i].View(), fixture->process(), &again);
    ExpectSameStack(want, first, i);
    ExpectSameStack(want, again, i);
    EXPECT_EQ(want.replayed_from, 0u) << "sample " << i;
    for (const UnwoundStack* s : {&first, &again}) {
      if (s->replayed_from == 0) continue;
      ++named;
      std::vector<uint64_t> avmas;
      for (const Frame& f : s->frames) {
        EXPECT_FALSE(f.kernel) << "sample " << i;
        avmas.push_back(f.avma);
      }
      auto [it, inserted] = frames_of_entry.try_emplace(s->replayed_from, avmas);
      if (!inserted) EXPECT_EQ(it->second, avmas) << "sample " << i;
    }
  }
  EXPECT_GT(named, 0u);
  // Every sample's second unwind is a replay, and so is the first of a sample taken at the pc
  // and sp of an earlier one whose words and registers were the same (the fixture has some);
  // each figure the walk counts is counted for a replay too.
  const UnwindMemoStats& st = memo.memo_stats();
  EXPECT_GE(st.hits, samples.size());
  EXPECT_EQ(st.hits + st.changed + st.misses, 2 * samples.size());
  EXPECT_EQ(memo.stats().replayed_stacks, st.hits);
  EXPECT_EQ(memo.stats().fp_fallback_frames, 2 * walker.stats().fp_fallback_frames);
  EXPECT_EQ(memo.stats().expr_frames, 2 * walker.stats().expr_frames);
  EXPECT_GT(walker.stats().expr_frames, 0u);
}

// A sample whose unwind completed inside its copy, with some frames.
const FixtureSample* CompleteSample(const LoadedFixture& fixture, UnwoundStack* stack) {
  DwarfUnwinder walker({.regs_mask = fixture.data().regs_mask, .memoize = false});
  for (const FixtureSample& s : fixture.data().samples) {
    walker.Unwind(s.View(), fixture.process(), stack);
    const uint64_t sp = s.regs[7];  // PERF_REG_X86_SP's place in the DWARF mask's order
    if (stack->end == StackEnd::kComplete && stack->frames.size() >= 6 &&
        stack->stack_high > sp && stack->stack_high - sp + 64 <= s.stack.size()) {
      return &s;
    }
  }
  return nullptr;
}

// One sample whose unwind completed inside its copy (`want`), and a fresh memoizing unwinder.
class OneCompleteSample : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture = LoadWorkload();
    ASSERT_NE(fixture, nullptr);
    s = CompleteSample(*fixture, &want);
    ASSERT_NE(s, nullptr);
    memo_ = std::make_unique<DwarfUnwinder>(DwarfUnwinderOptions{.regs_mask = fixture->data().regs_mask});
  }
  std::unique_ptr<LoadedFixture> fixture;
  UnwoundStack want;
  const FixtureSample* s = nullptr;
  std::unique_ptr<DwarfUnwinder> memo_;
};

TEST_F(OneCompleteSample, AChangedReturnAddressIsWalkedAgain) {
  DwarfUnwinder& memo = *memo_;
  DwarfUnwinder walker({.regs_mask = fixture->data().regs_mask, .memoize = false});
  UnwoundStack got;
  memo.Unwind(s->View(), fixture->process(), &got);

  // Overwrite the word holding the third frame's return address: the unwind now stops there.
  FixtureSample changed = *s;
  const uint64_t ra = want.frames[3].avma;
  size_t at = changed.stack.size();
  for (size_t off = 0; off + 8 <= changed.stack.size(); off += 8) {
    uint64_t word;
    std::memcpy(&word, changed.stack.data() + off, 8);
    if (word == ra) {
      at = off;
      break;
    }
  }
  ASSERT_LT(at, changed.stack.size());
  const uint64_t bogus = 0x10;
  std::memcpy(changed.stack.data() + at, &bogus, 8);
  walker.Unwind(changed.View(), fixture->process(), &want);
  memo.Unwind(changed.View(), fixture->process(), &got);
  ExpectSameStack(want, got, 0);
  EXPECT_LT(got.frames.size(), 6u);
  EXPECT_EQ(memo.memo_stats().changed, 1u);
  EXPECT_EQ(memo.memo_stats().hits, 0u);

  // A word above every frame the unwind read (past stack_high) is not looked at: a replay.
  FixtureSample unread = *s;
  walker.Unwind(s->View(), fixture->process(), &want);
  const size_t past = (want.stack_high - s->regs[7] + 7) / 8 * 8;
  ASSERT_LE(past + 8, unread.stack.size());
  unread.stack[past] ^= 0xff;
  memo.Unwind(s->View(), fixture->process(), &got);  // memoizes the original again
  memo.Unwind(unread.View(), fixture->process(), &got);
  ExpectSameStack(want, got, 0);
  EXPECT_EQ(memo.memo_stats().hits, 1u);
}

TEST_F(OneCompleteSample, NewMappingsOrAnotherProcessAreWalkedAgain) {
  DwarfUnwinder& memo = *memo_;
  UnwoundStack got;
  memo.Unwind(s->View(), fixture->process(), &got);

  // The same mappings plus one more: another generation, so no replay, and the same frames.
  sampler::AddressSpace grown = fixture->address_space();
  grown.Map({.start_avma = 0x1000, .end_avma = 0x2000, .module = sampler::kNoModule});
  ProcessView view = fixture->process();
  view.address_space = &grown;
  memo.Unwind(s->View(), view, &got);
  ExpectSameStack(want, got, 0);
  EXPECT_EQ(memo.memo_stats().hits, 0u);

  view = fixture->process();
  view.pid += 1;
  memo.Unwind(s->View(), view, &got);
  ExpectSameStack(want, got, 0);
  EXPECT_EQ(memo.memo_stats().hits, 0u);
  EXPECT_EQ(memo.memo_stats().misses, 3u);

  memo.Unwind(s->View(), fixture->process(), &got);
  EXPECT_EQ(memo.memo_stats().hits, 1u);
}

TEST_F(OneCompleteSample, StaysWithinItsBoundAndStoresLessWhenLittleRepeats) {
  DwarfUnwinder& memo = *memo_;
  UnwoundStack got;
  ProcessView view = fixture->process();
  // One key per pid, none repeated: after the first window only every 8th walk is stored, and
  // one more than the memo holds makes it start over.
  uint64_t unwinds = 0;
  while (memo.memo_stats().stored <= UnwindMemo::kMaxEntries && unwinds < 200'000) {
    view.pid = static_cast<int32_t>(1000 + unwinds++);
    memo.Unwind(s->View(), view, &got);
  }
  ExpectSameStack(want, got, 0);
  const UnwindMemoStats& st = memo.memo_stats();
  EXPECT_EQ(st.stored, UnwindMemo::kMaxEntries + 1);
  EXPECT_EQ(st.resets, 1u);
  EXPECT_EQ(st.hits, 0u);
  EXPECT_GT(unwinds, 4 * UnwindMemo::kMaxEntries);  // sparse after the first window
  EXPECT_LE(memo.memo_stats().stored, unwinds);
  // The newest entry survived the reset.
  memo.Unwind(s->View(), view, &got);
  EXPECT_EQ(memo.memo_stats().hits, 1u);

  // A stack that repeats while storing is sparse is still stored within kSparseStoreEvery.
  view.pid = 7;
  for (uint32_t i = 0; i <= UnwindMemo::kSparseStoreEvery; ++i) memo.Unwind(s->View(), view, &got);
  EXPECT_GE(memo.memo_stats().hits, 2u);
  ExpectSameStack(want, got, 0);
}

}  // namespace
}  // namespace nativeprof::unwind
