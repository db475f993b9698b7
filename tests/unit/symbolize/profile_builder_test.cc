// ProfileBuilder over a collector fed synthetic records: what the rest of a stack tells the
// symbolizer about its unmapped user frames.
#include "symbolize/profile_builder.h"

#include <linux/perf_event.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/record_parser.h"
#include "tests/testing/record_builder.h"
#include "unwind/callchain_unwinder.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::CommBuilder;
using ::nativeprof::testing::MmapBuilder;
using ::nativeprof::testing::RecordBytes;
using ::nativeprof::testing::SampleBuilder;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr uint64_t kKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
constexpr uint64_t kUser = static_cast<uint64_t>(PERF_CONTEXT_USER);
// Kernel functions, each 0x100 bytes from its address (a caller's return address - 1 stays in).
constexpr uint64_t kKsysRead = 0xffffffff81000150;
constexpr uint64_t kSyscall64 = 0xffffffff81000250;
constexpr uint64_t kLoadElfBinary = 0xffffffff81000350;
constexpr uint64_t kSysExecve = 0xffffffff81000450;

// Names kernel addresses from the table above and records the context of each unmapped frame.
class FakeSymbolizer final : public Symbolizer {
 public:
  void SymbolizeUser(int32_t, sampler::ModuleId, uint64_t, uint64_t,
                     std::vector<SymbolizedFrame>* out) override {
    out->push_back(SymbolizedFrame{.function = "user_function"});
  }
  void SymbolizeUnmapped(int32_t, uint64_t avma, UnmappedContext context,
                         std::vector<SymbolizedFrame>* out) override {
    unmapped.emplace_back(avma, context);
    out->push_back(SymbolizedFrame{.function = "[unknown]"});
  }
  void SymbolizeKernel(uint64_t avma, std::vector<SymbolizedFrame>* out) override {
    const char* name = "[kernel.kallsyms]";
    switch (avma >> 8) {
      case kKsysRead >> 8: name = "ksys_read"; break;
      case kSyscall64 >> 8: name = "do_syscall_64"; break;
      case kLoadElfBinary >> 8: name = "load_elf_binary"; break;
      case kSysExecve >> 8: name = "__x64_sys_execve"; break;
    }
    out->push_back(SymbolizedFrame{.function = name, .kind = ProfileFrameKind::kKernel});
  }
  SymbolizationStats Stats() const override { return {}; }

  std::vector<std::pair<uint64_t, UnmappedContext>> unmapped;
};

class ProfileBuilderTest : public ::testing::Test {
 protected:
  void Feed(const RecordBytes& r) {
    absl::StatusOr<sampler::ParseOutcome> o =
        sampler::ParseRecord(std::span<const uint8_t>(r.data(), r.size()), format_, collector_);
    ASSERT_TRUE(o.ok()) << o.status();
  }
  void Sample(std::vector<uint64_t> chain) {
    Feed(SampleBuilder(format_).Pid(1).Tid(1).Ip(chain[1]).Period(1).Callchain(std::move(chain))
             .Build());
  }

  sampler::SampleFormat format_ = testing::FramePointerFormat();
  unwind::CallchainUnwinder unwinder_;
  unwind::StackCollector collector_{&unwinder_, /*keep_timeline=*/false};
};

// bash execs /bin/true: past the point of no return its image is unmapped, and a sample's user
// address (still bash's) is in no mapping of the new one. Only under execve is that said; the
// same miss elsewhere is JIT code or a broken stack.
TEST_F(ProfileBuilderTest, UnmappedFramesUnderExecveAreToldSo) {
  Feed(MmapBuilder(format_).Pid(1).Tid(1).Start(0x400000).Len(0x2000).Pgoff(0x1000).Dev(8, 1)
           .Inode(42).Filename("/usr/bin/bash").Build());
  Sample({kKernel, kKsysRead, kSyscall64, kUser, 0x7000, 0x400100});
  Feed(CommBuilder(format_).Pid(1).Tid(1).Comm("true").Exec(true).Build());
  Sample({kKernel, kLoadElfBinary, kSysExecve, kSyscall64, kUser, 0x400100});
  Sample({kUser, 0x400200});

  FakeSymbolizer symbolizer;
  const Profile profile = BuildProfile(collector_, symbolizer, ProfileBuildOptions());
  EXPECT_THAT(symbolizer.unmapped,
              UnorderedElementsAre(Pair(0x7000, UnmappedContext::kNone),
                                   Pair(0x400100, UnmappedContext::kInsideExecve),
                                   Pair(0x400200, UnmappedContext::kNone)));
  EXPECT_EQ(profile.stacks.size(), 3u);
}

TEST(IsExecveFunctionTest, TheSystemCallUnderEveryAbiAndTheExecCode) {
  for (const char* f : {"__x64_sys_execve", "__x64_sys_execveat", "__ia32_sys_execve",
                        "__x32_compat_sys_execveat", "__arm64_sys_execve", "__se_sys_execve",
                        "do_execveat_common.isra.0", "bprm_execve", "load_elf_binary",
                        "begin_new_exec", "kernel_execve"}) {
    EXPECT_TRUE(IsExecveFunction(f)) << f;
  }
  for (const char* f : {"do_syscall_64", "ksys_read", "__x64_sys_execve_hook", "execve",
                        "elf_load", "[kernel.kallsyms]", ""}) {
    EXPECT_FALSE(IsExecveFunction(f)) << f;
  }
}

}  // namespace
}  // namespace nativeprof::symbolize
