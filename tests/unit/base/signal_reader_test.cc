#include "base/signal_reader.h"

#include <poll.h>
#include <signal.h>

#include <optional>
#include <utility>

#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof {
namespace {

// SIGUSR1/SIGUSR2 only: the test runner's own SIGINT/SIGTERM must keep working.
bool Blocked(int sig) {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, sig) == 1;
}

volatile sig_atomic_t g_delivered = 0;
void CountDelivery(int) { g_delivered = g_delivered + 1; }

// Installs CountDelivery for SIGUSR2 and restores the old action afterwards.
class ScopedCountingHandler {
 public:
  ScopedCountingHandler() {
    g_delivered = 0;
    struct sigaction sa {};
    sa.sa_handler = CountDelivery;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, &old_);
  }
  ~ScopedCountingHandler() { sigaction(SIGUSR2, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

TEST(SignalReaderTest, ReadsARaisedSignalThroughItsFd) {
  NP_ASSERT_OK_AND_ASSIGN(SignalReader reader, SignalReader::Create({.signals = {SIGUSR1}}));
  EXPECT_TRUE(Blocked(SIGUSR1));
  EXPECT_FALSE(reader.Pending());
  EXPECT_EQ(reader.Read(), 0) << "nothing pending: the fd is non-blocking";

  ASSERT_EQ(raise(SIGUSR1), 0);
  pollfd p{reader.fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 1000), 1);
  EXPECT_TRUE(reader.Pending());
  EXPECT_EQ(reader.Read(), SIGUSR1);
  EXPECT_EQ(reader.Read(), 0);
  EXPECT_FALSE(reader.Pending());
}

TEST(SignalReaderTest, RestoresTheMaskItFound) {
  ASSERT_FALSE(Blocked(SIGUSR1));
  {
    NP_ASSERT_OK_AND_ASSIGN(SignalReader reader,
                            SignalReader::Create({.signals = {SIGUSR1, SIGUSR2}}));
    EXPECT_TRUE(Blocked(SIGUSR1));
    EXPECT_TRUE(Blocked(SIGUSR2));
    // A moved-from reader restores nothing; the one it moved into restores once.
    std::optional<SignalReader> moved(std::move(reader));
    EXPECT_TRUE(Blocked(SIGUSR1));
  }
  EXPECT_FALSE(Blocked(SIGUSR1));
  EXPECT_FALSE(Blocked(SIGUSR2));
}

TEST(SignalReaderTest, OnlyItsOwnSignalsArePending) {
  NP_ASSERT_OK_AND_ASSIGN(SignalReader reader, SignalReader::Create({.signals = {SIGUSR1}}));
  ScopedCountingHandler handler;
  ASSERT_EQ(raise(SIGUSR2), 0);  // not in the set: delivered to the handler at once
  EXPECT_EQ(g_delivered, 1);
  EXPECT_FALSE(reader.Pending());
}

TEST(SignalReaderTest, UnreadSignalsAreDeliveredWhenTheMaskIsRestored) {
  ScopedCountingHandler handler;
  {
    NP_ASSERT_OK_AND_ASSIGN(SignalReader reader, SignalReader::Create({.signals = {SIGUSR2}}));
    ASSERT_EQ(raise(SIGUSR2), 0);
    EXPECT_EQ(g_delivered, 0);
  }
  EXPECT_EQ(g_delivered, 1);
}

TEST(SignalReaderTest, DiscardUnreadDropsThemInstead) {
  ScopedCountingHandler handler;
  {
    NP_ASSERT_OK_AND_ASSIGN(SignalReader reader,
                            SignalReader::Create({.signals = {SIGUSR2}, .discard_unread = true}));
    ASSERT_EQ(raise(SIGUSR2), 0);
  }
  EXPECT_EQ(g_delivered, 0);
  EXPECT_FALSE(Blocked(SIGUSR2));
}

TEST(SignalReaderTest, InvalidSignalIsAnErrorAndBlocksNothing) {
  EXPECT_FALSE(SignalReader::Create({.signals = {SIGUSR1, 0}}).ok());
  EXPECT_FALSE(Blocked(SIGUSR1));
}

}  // namespace
}  // namespace nativeprof
