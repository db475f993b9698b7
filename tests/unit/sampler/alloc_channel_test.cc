#include "sampler/alloc_channel.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

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

// A name that is taken is refused, and the file there, not this call's, is left alone.
TEST(AllocChannelTest, ExistingFileIsNeitherReusedNorRemoved) {
  const std::string dir = testing::MakeTempDir();
  std::vector<std::string> taken;
  for (int i = 0; i < 64; ++i) {
    taken.push_back(dir + "/nativeprof-alloc-" + std::to_string(::getpid()) + "-" +
                    std::to_string(i));
    FILE* f = std::fopen(taken.back().c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  absl::StatusOr<AllocChannel> ch = AllocChannel::Create(dir, 1, 1 << 16);
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.status().message().find("cannot create"), absl::string_view::npos);
  for (const std::string& path : taken) EXPECT_TRUE(Exists(path)) << path;
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
