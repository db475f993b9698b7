// `record -p TID`: a thread's id stands for its process. Serial: the target's two workers spin on
// both CPUs, which would slow the attach tests that measure a server's rate beside it.
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;

// -p with a thread's id records that thread's process, as perf -p does, and says so: under the
// thread's id, no sample's mappings or process would be found.
TEST(AttachTest, AThreadIdStandsForItsProcess) {
  NP_SKIP_IF_NO_PERF();
  BackgroundProcess server({TargetPath("attach_server")}, /*capture_stdout=*/true);
  ASSERT_GT(server.pid(), 0);
  ASSERT_THAT(server.ReadLine(), HasSubstr("PORT "));
  std::string worker;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(server.pid()) + "/task")) {
    const std::string tid = entry.path().filename();
    if (tid != std::to_string(server.pid())) worker = tid;
  }
  ASSERT_FALSE(worker.empty());
  const std::string folded = MakeTempDir() + "/tid.folded";
  CommandResult r = RunCommand(
      {NativeprofBinary(), "record", "-p", worker, "--duration", "1", "-o", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(worker + " is a thread of process " +
                               std::to_string(server.pid())));
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  ASSERT_GT(p.total(), 100u) << r.err;
  EXPECT_GT(p.Self("server_worker_alpha") + p.Self("server_worker_beta"), p.total() * 8 / 10)
      << ReadFileOrEmpty(folded);
  nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  ASSERT_TRUE(meta.is_object());
  EXPECT_EQ(meta["processes"].get<int>(), 1);
}

}  // namespace
}  // namespace nativeprof::testing
