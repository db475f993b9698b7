// End to end: `nativeprof record` on the sym_* programs names every frame - C and C++ functions of
// a PIE and its shared library, inlined frames (_[i]) unless --no-inline, a stripped binary through
// its debug file and through MiniDebugInfo, libc internals through libc6-dbg, Rust generics and
// closures (legacy and v0 mangling), JIT code through /tmp/perf-PID.map.
#include <elf.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class SymbolizeRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NP_SKIP_IF_NO_PERF();
    dir_ = MakeTempDir();
  }

  // Records `argv` and returns the folded profile; `extra` are record options.
  FoldedProfile Record(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra = {}) {
    std::string folded = dir_ + "/out.folded";
    std::vector<std::string> cmd = {NativeprofBinary(), "record", "-F", "999", "-o", folded};
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    cmd.push_back("--");
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    last_ = RunCommand(cmd);
    EXPECT_EQ(last_.exit_code, 0) << last_.err;
    text_ = ReadFileOrEmpty(folded);
    return FoldedProfile::Parse(text_);
  }

  bool AnyFrame(const FoldedProfile& p, const std::string& needle) const {
    for (const FoldedLine& l : p.lines()) {
      for (const std::string& f : l.frames) {
        if (absl::StrContains(f, needle)) return true;
      }
    }
    return false;
  }

  std::string dir_;
  std::string text_;
  CommandResult last_;
};

TEST_F(SymbolizeRecordTest, NamesProgramLibraryAndInlinedFrames) {
  FoldedProfile p = Record({TargetPath("sym_prog_shared"), "spin", "1"});
  ASSERT_GT(p.total(), 100u) << last_.err;
  EXPECT_GT(p.Total("symtest::Worker<int>::Run"), 0u) << text_;
  EXPECT_GT(p.Total("sym_c_function"), 0u) << text_;
  EXPECT_GT(p.Total("symlib::Hidden"), 0u) << text_;  // hidden symbol of the shared library
  EXPECT_GT(p.Total("symtest::InlinedHelper_[i]"), 0u) << text_;
  EXPECT_GT(p.WithSequence({"symtest::InlineCaller", "symtest::InlinedHelper_[i]"}), 0u) << text_;
  // __libc_start_call_main is a local symbol: only libc6-dbg's debug file names it.
  if (std::filesystem::exists("/usr/lib/debug/.build-id")) {
    EXPECT_GT(p.Total("__libc_start_call_main"), 0u) << text_;
  }
  EXPECT_FALSE(AnyFrame(p, "[sym_prog_shared]")) << text_;
}

TEST_F(SymbolizeRecordTest, NoInlineDropsInlinedFrames) {
  FoldedProfile p = Record({TargetPath("sym_prog"), "spin", "0.5"}, {"--no-inline"});
  ASSERT_GT(p.total(), 50u) << last_.err;
  EXPECT_FALSE(AnyFrame(p, "_[i]")) << text_;
  EXPECT_GT(p.Total("symtest::InlineCaller"), 0u) << text_;
}

TEST_F(SymbolizeRecordTest, StrippedBinaryNamedThroughDebuglinkAndMiniDebugInfo) {
  for (const char* program : {"sym_prog_stripped", "sym_prog_minidebug"}) {
    SCOPED_TRACE(program);
    FoldedProfile p = Record({TargetPath(program), "spin", "0.5"});
    ASSERT_GT(p.total(), 50u) << last_.err;
    EXPECT_GT(p.Total("symtest::Worker<int>::Run"), 0u) << text_;
    EXPECT_GT(p.Total("sym_c_function"), 0u) << text_;
  }
}

// A debug file whose compressed .debug_info claims 2 GiB (issue 15's libFuzzer finding, in a real
// debug file): the section is left out with one line that names it, the debug file's symbol
// table still names the stripped program, and nativeprof stays far from allocating the claim.
TEST_F(SymbolizeRecordTest, DebugFileWithImplausibleCompressedSectionStillNames) {
  const std::string debug = dir_ + "/hostile.debug";
  const std::string program = dir_ + "/hostile_prog";
  ASSERT_EQ(RunCommand({"objcopy", "--only-keep-debug", "--compress-debug-sections=zlib-gabi",
                        TargetPath("sym_prog"), debug})
                .exit_code,
            0);
  std::string image = ReadFileOrEmpty(debug);
  GElf_Shdr shdr;
  {
    // A zlib section with a plausible claim: ElfImage reads the file as it is, offsets included.
    NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(debug));
    ASSERT_NE(elf->FindSection(".debug_info", &shdr), nullptr);
  }
  const uint64_t chdr_at = shdr.sh_offset;
  Elf64_Chdr chdr;
  std::memcpy(&chdr, image.data() + chdr_at, sizeof(chdr));
  ASSERT_EQ(chdr.ch_type, static_cast<uint32_t>(ELFCOMPRESS_ZLIB));
  chdr.ch_size = uint64_t{1} << 31;
  std::memcpy(image.data() + chdr_at, &chdr, sizeof(chdr));
  WriteFile(debug, image);
  ASSERT_EQ(RunCommand({"strip", "--strip-all", "-o", program, TargetPath("sym_prog")}).exit_code, 0);
  // objcopy takes the debuglink's CRC from the file as it is now, hostile header included.
  ASSERT_EQ(RunCommand({"objcopy", "--add-gnu-debuglink=" + debug, program}).exit_code, 0);

  FoldedProfile p = Record({program, "spin", "0.5"}, {"--call-graph", "fp"});
  ASSERT_GT(p.total(), 50u) << last_.err;
  EXPECT_GT(p.Total("sym_c_function"), 0u) << text_;
  const std::string want = "section .debug_info of " + debug +
                           " claims 2147483648 bytes from ";
  size_t lines = 0;
  for (absl::string_view line : absl::StrSplit(last_.err, '\n')) {
    if (absl::StrContains(line, want)) {
      ++lines;
      EXPECT_TRUE(absl::EndsWith(line, " compressed: corrupt, skipped")) << line;
    }
  }
  EXPECT_EQ(lines, 1u) << last_.err;
  EXPECT_LT(last_.max_rss_kb, 100 * 1024) << "peak RSS of nativeprof";
}

TEST_F(SymbolizeRecordTest, RustGenericsAndClosures) {
  for (const char* mangling : {"legacy", "v0"}) {
    std::string program = TargetPath(std::string("sym_rust_") + mangling);
    if (!std::filesystem::exists(program)) {
      GTEST_SKIP() << "rustc not found at configure time (looked in PATH and ~/.cargo/bin)";
    }
    SCOPED_TRACE(mangling);
    FoldedProfile p = Record({program, "0.5"});
    ASSERT_GT(p.total(), 50u) << last_.err;
    if (std::string(mangling) == "legacy") {
      EXPECT_TRUE(AnyFrame(p, "sym_rust::Matrix<T>::sum")) << text_;
      EXPECT_TRUE(AnyFrame(p, "sym_rust::main::{{closure}}")) << text_;
    } else {
      EXPECT_TRUE(AnyFrame(p, "<sym_rust::Matrix<f32>>::sum")) << text_;
      EXPECT_TRUE(AnyFrame(p, "sym_rust::main::{closure#")) << text_;
    }
    EXPECT_FALSE(AnyFrame(p, "_ZN8sym_rust")) << text_;
    EXPECT_FALSE(AnyFrame(p, "_RNv")) << text_;
  }
}

TEST_F(SymbolizeRecordTest, JitFramesFromPerfMap) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "sym_jit generates x86-64 code";
#endif
  FoldedProfile p = Record({TargetPath("sym_jit"), "0.5"});
  int pid = 0;
  size_t at = last_.out.find("pid ");
  if (at != std::string::npos) {
    ASSERT_TRUE(absl::SimpleAtoi(last_.out.substr(at + 4, last_.out.find('\n', at) - at - 4), &pid));
    std::remove(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
  }
  ASSERT_GT(pid, 0) << last_.out;
  ASSERT_GT(p.total(), 20u) << last_.err;
  EXPECT_GT(p.SelfShare("jit_spin_loop_[j]"), 0.5) << text_;
}

// Attaching to a running JIT: /proc/PID/maps gives the JIT's anonymous mapping offset 0, where
// the kernel's MMAP2 records give its start address; the perf map is looked up by address either
// way (before, every sample was [unknown] when attached).
TEST_F(SymbolizeRecordTest, JitFramesFromPerfMapWhenAttached) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "sym_jit generates x86-64 code";
#endif
  BackgroundProcess jit({TargetPath("sym_jit"), "3"}, /*capture_stdout=*/true);
  ASSERT_EQ(jit.ReadLine(), "pid " + std::to_string(jit.pid()));
  const std::string folded = dir_ + "/attach.folded";
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-p", std::to_string(jit.pid()),
                                "--duration", "1", "-o", folded});
  std::remove(("/tmp/perf-" + std::to_string(jit.pid()) + ".map").c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  ASSERT_GT(p.total(), 200u) << r.err;
  EXPECT_GT(p.SelfShare("jit_spin_loop_[j]"), 0.5) << ReadFileOrEmpty(folded);
}

// A JIT in a container: its map is in its own /tmp, named after its pid there (1 here), as perf
// also finds it. Run in new pid and mount namespaces with a tmpfs of their own on /tmp (the
// CI's clone is under /tmp, hidden by that mount: the program is run from a descriptor).
TEST_F(SymbolizeRecordTest, JitFramesFromPerfMapInAnotherNamespace) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "sym_jit generates x86-64 code";
#endif
  if (RunCommand({"unshare", "--pid", "--fork", "--mount", "--propagation", "private", "true"})
          .exit_code != 0) {
    GTEST_SKIP() << "unshare --pid --mount refused (needs root or user namespaces)";
  }
  BackgroundProcess box({"/usr/bin/unshare", "--pid", "--fork", "--mount", "--propagation", "private",
                         "sh", "-c",
                         // The program is opened before the mount: it may be under /tmp.
                         "exec 9<\"$0\" && mount -t tmpfs none /tmp && exec /proc/self/fd/9 3",
                         TargetPath("sym_jit")},
                        /*capture_stdout=*/true);
  ASSERT_EQ(box.ReadLine(), "pid 1");
  // unshare's child, which exec'd sh and then sym_jit.
  std::string children = ReadFileOrEmpty("/proc/" + std::to_string(box.pid()) + "/task/" +
                                         std::to_string(box.pid()) + "/children");
  int jit_pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(children), &jit_pid)) << children;
  ASSERT_FALSE(std::filesystem::exists("/tmp/perf-1.map"));
  const std::string folded = dir_ + "/ns.folded";
  CommandResult r = RunCommand({NativeprofBinary(), "record", "-p", std::to_string(jit_pid),
                                "--duration", "1", "-o", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  FoldedProfile p = FoldedProfile::Parse(ReadFileOrEmpty(folded));
  ASSERT_GT(p.total(), 200u) << r.err;
  EXPECT_GT(p.SelfShare("jit_spin_loop_[j]"), 0.5) << ReadFileOrEmpty(folded);
  EXPECT_EQ(box.Wait(), 0);
}

}  // namespace
}  // namespace nativeprof::testing
