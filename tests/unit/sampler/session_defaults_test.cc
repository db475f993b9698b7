// The ring-size and wakeup defaults Session and `record --call-graph dwarf` use.
#include <unistd.h>

#include "gtest/gtest.h"
#include "sampler/session.h"

namespace nativeprof::sampler {
namespace {

size_t RingBytes(size_t pages) { return pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

TEST(SessionDefaultsTest, UnlimitedDwarfRingsAreTwoMiBUpToEightMiBInAll) {
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(1)), 2 * kMiB);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(2)), 2 * kMiB);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(4)), 2 * kMiB);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(8)), 1 * kMiB);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(16)), kMiB / 2);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(256)), kMiB / 2);  // never less
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(0)), 2 * kMiB);
  for (size_t rings : {1, 3, 6, 12, 64}) {
    const size_t pages = Session::UnlimitedDwarfRingPages(rings);
    EXPECT_EQ(pages & (pages - 1), 0u) << "a ring must be a power of two pages: " << rings;
  }
}

TEST(SessionDefaultsTest, SwitchSamplesGetFourMiBRingsUpToSixteenMiB) {
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(2, true)), 4 * kMiB);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(4, true)), 4 * kMiB);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(8, true)), 2 * kMiB);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(32, true)), kMiB / 2);
  EXPECT_EQ(RingBytes(Session::UnlimitedDwarfRingPages(256, true)), kMiB / 2);
}

TEST(SessionDefaultsTest, LargeRingsWakeAtHalfSmallOnesAtAQuarter) {
  EXPECT_EQ(Session::WakeupBytes(2 << 20), 1u << 20);
  EXPECT_EQ(Session::WakeupBytes(1 << 20), 512u << 10);
  EXPECT_EQ(Session::WakeupBytes(512 << 10), 128u << 10);
  EXPECT_EQ(Session::WakeupBytes(64 << 10), 16u << 10);
}

}  // namespace
}  // namespace nativeprof::sampler
