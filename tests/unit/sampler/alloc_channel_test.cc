#include "sampler/alloc_channel.h"

#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::sampler {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
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
