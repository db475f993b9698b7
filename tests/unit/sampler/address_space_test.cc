#include "sampler/address_space.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::sampler {
namespace {

Mapping M(uint64_t start, uint64_t end, uint64_t offset, ModuleId module) {
  Mapping m;
  m.start_avma = start;
  m.end_avma = end;
  m.file_offset = offset;
  m.prot = 5;
  m.module = module;
  return m;
}

// (start, end, offset, module) of every mapping, in address order.
struct Row {
  uint64_t start, end, offset;
  ModuleId module;
  friend bool operator==(const Row&, const Row&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Row& r) {
    return os << std::hex << "[" << r.start << "," << r.end << ") off " << r.offset << std::dec
              << " mod " << r.module;
  }
};
std::vector<Row> Rows(const AddressSpace& as) {
  std::vector<Row> rows;
  for (const auto& [start, m] : as.mappings()) {
    EXPECT_EQ(start, m.start_avma);
    rows.push_back({m.start_avma, m.end_avma, m.file_offset, m.module});
  }
  return rows;
}

using ::testing::ElementsAre;

TEST(AddressSpaceTest, FindAtBoundaries) {
  AddressSpace as;
  as.Map(M(0x1000, 0x3000, 0x0, 1));
  as.Map(M(0x3000, 0x4000, 0x5000, 2));
  EXPECT_EQ(as.Find(0xfff), nullptr);
  ASSERT_NE(as.Find(0x1000), nullptr);
  EXPECT_EQ(as.Find(0x1000)->module, 1u);
  EXPECT_EQ(as.Find(0x2fff)->module, 1u);
  EXPECT_EQ(as.Find(0x3000)->module, 2u);
  EXPECT_EQ(as.Find(0x3fff)->module, 2u);
  EXPECT_EQ(as.Find(0x4000), nullptr);
  EXPECT_EQ(as.Find(0), nullptr);
  EXPECT_EQ(as.Find(~uint64_t{0}), nullptr);
  EXPECT_EQ(as.Find(0x3010)->FileOffset(0x3010), 0x5010u);
  EXPECT_EQ(as.Find(0x1234)->FileOffset(0x1234), 0x234u);
}

TEST(AddressSpaceTest, MapInTheMiddleSplitsHeadAndTail) {
  AddressSpace as;
  as.Map(M(0x10000, 0x20000, 0x1000, 1));
  as.Map(M(0x14000, 0x15000, 0x0, 2));
  EXPECT_THAT(Rows(as), ElementsAre(Row{0x10000, 0x14000, 0x1000, 1}, Row{0x14000, 0x15000, 0, 2},
                                    Row{0x15000, 0x20000, 0x1000 + 0x5000, 1}));
  // The tail's file offset follows the pages it still maps.
  EXPECT_EQ(as.Find(0x16000)->FileOffset(0x16000), 0x7000u);
}

TEST(AddressSpaceTest, MapOverlappingSeveralMappings) {
  AddressSpace as;
  as.Map(M(0x1000, 0x2000, 0, 1));
  as.Map(M(0x2000, 0x3000, 0x1000, 1));
  as.Map(M(0x3000, 0x4000, 0x2000, 1));
  as.Map(M(0x4000, 0x5000, 0x3000, 1));
  // Covers the end of the first, all of the second and third, the start of the fourth.
  as.Map(M(0x1800, 0x4800, 0x100000, 9));
  EXPECT_THAT(Rows(as), ElementsAre(Row{0x1000, 0x1800, 0, 1}, Row{0x1800, 0x4800, 0x100000, 9},
                                    Row{0x4800, 0x5000, 0x3800, 1}));
}

TEST(AddressSpaceTest, MapReplacesIdenticalRangeAndIgnoresEmpty) {
  AddressSpace as;
  as.Map(M(0x1000, 0x2000, 0, 1));
  as.Map(M(0x1000, 0x2000, 0x4000, 2));
  EXPECT_THAT(Rows(as), ElementsAre(Row{0x1000, 0x2000, 0x4000, 2}));
  const uint64_t gen = as.generation();
  as.Map(M(0x5000, 0x5000, 0, 3));
  as.Map(M(0x6000, 0x5000, 0, 3));
  EXPECT_EQ(as.size(), 1u);
  EXPECT_EQ(as.generation(), gen);
}

TEST(AddressSpaceTest, UnmapCutsAndGenerationTracksChanges) {
  AddressSpace as;
  uint64_t gen = as.generation();
  as.Map(M(0x1000, 0x5000, 0, 1));
  EXPECT_NE(as.generation(), gen);
  gen = as.generation();

  as.Unmap(0x8000, 0x9000);  // nothing there
  EXPECT_EQ(as.generation(), gen);
  as.Unmap(0x2000, 0x2000);  // empty range
  EXPECT_EQ(as.generation(), gen);

  as.Unmap(0x2000, 0x3000);
  EXPECT_NE(as.generation(), gen);
  EXPECT_THAT(Rows(as), ElementsAre(Row{0x1000, 0x2000, 0, 1}, Row{0x3000, 0x5000, 0x2000, 1}));
  EXPECT_EQ(as.Find(0x2800), nullptr);

  as.Unmap(0x0, 0x1800);  // head of the first
  EXPECT_THAT(Rows(as), ElementsAre(Row{0x1800, 0x2000, 0x800, 1}, Row{0x3000, 0x5000, 0x2000, 1}));
  as.Unmap(0x4000, 0x10000);  // tail of the last
  EXPECT_THAT(Rows(as), ElementsAre(Row{0x1800, 0x2000, 0x800, 1}, Row{0x3000, 0x4000, 0x2000, 1}));
  as.Unmap(0, ~uint64_t{0});
  EXPECT_EQ(as.size(), 0u);
}

TEST(AddressSpaceTest, ClearForgetsEverything) {
  AddressSpace as;
  as.Map(M(0x1000, 0x2000, 0, 1));
  as.Map(M(0x3000, 0x4000, 0, 2));
  const uint64_t gen = as.generation();
  as.Clear();
  EXPECT_EQ(as.size(), 0u);
  EXPECT_EQ(as.Find(0x1000), nullptr);
  EXPECT_NE(as.generation(), gen);
}

// Find remembers the mapping it found last; every change must drop that memory.
TEST(AddressSpaceTest, RepeatedFindsFollowChanges) {
  AddressSpace as;
  as.Map(M(0x1000, 0x3000, 0, 1));
  ASSERT_NE(as.Find(0x1800), nullptr);
  EXPECT_EQ(as.Find(0x1800)->module, 1u);
  EXPECT_EQ(as.Find(0x3000), nullptr);  // just past the remembered mapping
  EXPECT_EQ(as.Find(0x0fff), nullptr);
  as.Map(M(0x1000, 0x2000, 0, 2));      // replaces the first half
  ASSERT_NE(as.Find(0x1800), nullptr);
  EXPECT_EQ(as.Find(0x1800)->module, 2u);
  ASSERT_NE(as.Find(0x2800), nullptr);
  EXPECT_EQ(as.Find(0x2800)->module, 1u);
  as.Unmap(0x2000, 0x3000);
  EXPECT_EQ(as.Find(0x2800), nullptr);
  ASSERT_NE(as.Find(0x1800), nullptr);
  as.Clear();
  EXPECT_EQ(as.Find(0x1800), nullptr);
}

TEST(AddressSpaceTest, CopiesFindInTheirOwnMappings) {
  AddressSpace parent;
  parent.Map(M(0x1000, 0x2000, 0, 1));
  ASSERT_NE(parent.Find(0x1800), nullptr);  // remembered by the parent
  AddressSpace child = parent;
  ASSERT_NE(child.Find(0x1800), nullptr);
  EXPECT_NE(child.Find(0x1800), parent.Find(0x1800));  // its own copy, not the parent's node
  parent.Clear();
  ASSERT_NE(child.Find(0x1800), nullptr);
  EXPECT_EQ(child.Find(0x1800)->module, 1u);
  AddressSpace assigned;
  assigned.Map(M(0x5000, 0x6000, 0, 3));
  ASSERT_NE(assigned.Find(0x5800), nullptr);
  assigned = child;
  EXPECT_EQ(assigned.Find(0x5800), nullptr);
  ASSERT_NE(assigned.Find(0x1800), nullptr);
  EXPECT_NE(assigned.Find(0x1800), child.Find(0x1800));
}

}  // namespace
}  // namespace nativeprof::sampler
