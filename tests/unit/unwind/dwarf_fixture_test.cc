// Unwinds samples recorded from the -O2 -fomit-frame-pointer test programs (fixtures captured by
// tests/targets/dwarf_capture into tests/testdata/unwind/) and checks where the stacks end, which
// functions they pass through, and that the native and libunwind backends agree.
#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"
#include "tests/unit/unwind/fixture_symbols.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/libunwind_unwinder.h"
#include "unwind/sample_fixture.h"

namespace nativeprof::unwind {
namespace {

using ::testing::Contains;

std::unique_ptr<LoadedFixture> LoadOrDie(const std::string& name) {
  // NP_FIXTURE_DIR points the dump (NP_DUMP=1) at another capture while investigating.
  const char* dir = getenv("NP_FIXTURE_DIR");
  auto f = LoadedFixture::Load(dir != nullptr ? std::string(dir)
                                              : nativeprof::testing::SourcePath(
                                                    "tests/testdata/unwind/" + name));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : nullptr;
}

// The fixture: nofp_workload 0.6 2 (2 threads, Recurse depth 40, DeepRecurse depth 200, which
// outgrows the 8 KiB stack copy), 80 samples.
TEST(DwarfFixtureTest, WorkloadStacksReachTheOutermostFrame) {
  auto fixture = LoadOrDie("nofp_workload");
  ASSERT_NE(fixture, nullptr);
  ASSERT_GE(fixture->data().samples.size(), 20u);
  DwarfUnwinder unwinder({.regs_mask = fixture->data().regs_mask});
  testing::FixtureSymbols symbols(*fixture);
  UnwoundStack stack;
  int complete = 0, deep_truncated = 0, signal_stacks = 0, vdso_stacks = 0;
  for (const FixtureSample& s : fixture->data().samples) {
    unwinder.Unwind(s.View(), fixture->process(), &stack);
    std::vector<std::string> names = symbols.Names(stack);
    const std::string all = absl::StrJoin(names, " <- ");
    if (getenv("NP_DUMP")) {
      std::printf("%d end=%d %s\n", static_cast<int>(stack.frames.size()),
                  static_cast<int>(stack.end), all.c_str());
      if (stack.end == StackEnd::kBadFrame) {
        for (const Frame& f : stack.frames) {
          const sampler::Mapping* m = fixture->address_space().Find(LookupAvma(f));
          std::printf("  %#lx file offset %#lx\n", f.avma, m ? m->FileOffset(f.avma) : 0);
        }
        std::printf("  sp %#lx bp %#lx\n", s.regs[7], s.regs[6]);
      }
    }
    ASSERT_FALSE(names.empty());
    if (stack.end == StackEnd::kComplete) {
      ++complete;
      // The main thread ends in _start; the others in libc's start_thread <- clone3 (not in
      // the stripped libc's .dynsym, so unnamed here) right above ThreadMain.
      auto thread_main = std::find(names.begin(), names.end(), "ThreadMain");
      if (thread_main != names.end()) {
        EXPECT_EQ(names.end() - thread_main, 3) << all;
      } else {
        EXPECT_EQ(names.back(), "_start") << all;
        EXPECT_THAT(names, Contains("main")) << all;
      }
    } else {
      // Only DeepRecurse's 200 frames of ~128 bytes outgrow the copied 8 KiB.
      EXPECT_EQ(stack.end, StackEnd::kTruncatedStack) << all;
      EXPECT_EQ(names.back(), "DeepRecurse") << all;
      ++deep_truncated;
    }
    auto sig = std::find(names.begin(), names.end(), "SignalWork");
    if (sig != names.end()) {
      ++signal_stacks;
      // SignalWork <- __restore_rt <- the interrupted function, at an exact PC.
      const size_t interrupted = (sig - names.begin()) + 2;
      ASSERT_LT(interrupted, names.size()) << all;
      EXPECT_EQ(stack.frames[interrupted].kind, FrameAddressKind::kInstructionPointer);
      // The trampoline is looked up at its own first byte, not one before it.
      EXPECT_EQ(stack.frames[interrupted - 1].kind, FrameAddressKind::kInstructionPointer);
    }
    if (names[0] == "__vdso_clock_gettime") {
      ++vdso_stacks;
      EXPECT_EQ(stack.end, StackEnd::kComplete) << all;
    }
  }
  const int n = static_cast<int>(fixture->data().samples.size());
  EXPECT_EQ(complete + deep_truncated, n);
  EXPECT_GE(complete, n / 2);
  EXPECT_GT(deep_truncated, 0);
  EXPECT_GT(signal_stacks, 0);
  EXPECT_GT(vdso_stacks, 0);
  // Signal frames and PLT stubs need the expression interpreter; the rest is the fast path.
  const CfiCacheStats cfi = unwinder.cfi_stats();
  EXPECT_GT(cfi.fast_rules, cfi.expr_rules);
  EXPECT_GT(cfi.hits, cfi.misses);
}

TEST(DwarfFixtureTest, AShorterCopyTruncatesAtTheRightFrame) {
  auto fixture = LoadOrDie("nofp_workload");
  ASSERT_NE(fixture, nullptr);
  DwarfUnwinder unwinder({.regs_mask = fixture->data().regs_mask, .splice_kernel_chain = false});
  UnwoundStack full, cut;
  int checked = 0;
  for (const FixtureSample& s : fixture->data().samples) {
    unwinder.Unwind(s.View(), fixture->process(), &full);
    if (full.end != StackEnd::kComplete || full.frames.size() < 6) continue;
    FixtureSample shorter = s;
    shorter.stack.resize(256);
    unwinder.Unwind(shorter.View(), fixture->process(), &cut);
    if (cut.end == StackEnd::kComplete) continue;  // the whole stack fit in 256 bytes
    EXPECT_EQ(cut.end, StackEnd::kTruncatedStack);
    ASSERT_LT(cut.frames.size(), full.frames.size());
    for (size_t i = 0; i < cut.frames.size(); ++i) EXPECT_EQ(cut.frames[i].avma, full.frames[i].avma);
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST(DwarfFixtureTest, LibunwindAgrees) {
  auto fixture = LoadOrDie("nofp_workload");
  ASSERT_NE(fixture, nullptr);
  DwarfUnwinder native({.regs_mask = fixture->data().regs_mask});
  LibunwindUnwinder lu({.regs_mask = fixture->data().regs_mask});
  testing::FixtureSymbols symbols(*fixture);
  UnwoundStack a, b;
  int same = 0, n = 0;
  for (const FixtureSample& s : fixture->data().samples) {
    native.Unwind(s.View(), fixture->process(), &a);
    lu.Unwind(s.View(), fixture->process(), &b);
    ++n;
    bool eq = a.frames.size() == b.frames.size() && a.end == b.end;
    for (size_t i = 0; eq && i < a.frames.size(); ++i) eq = a.frames[i].avma == b.frames[i].avma;
    same += eq;
    if (getenv("NP_DUMP") && !eq) {
      std::printf("native end=%d %s\nlibunw end=%d %s\n", static_cast<int>(a.end),
                  absl::StrJoin(symbols.Names(a), " <- ").c_str(), static_cast<int>(b.end),
                  absl::StrJoin(symbols.Names(b), " <- ").c_str());
    }
  }
  EXPECT_EQ(same, n);
}

TEST(ZeroAllButUnwindTablesTest, SectionNameTableOutsideTheImageLeavesItAsItIs) {
  // An ELF header, two section headers, then a byte to be zeroed; the name table (section 1)
  // claims to start 1 TiB in, where reading a name would fault.
  std::string image(sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Shdr) + 1, '\x55');
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_shoff = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 2;
  eh.e_shstrndx = 1;
  std::memcpy(image.data(), &eh, sizeof(eh));
  Elf64_Shdr sh[2]{};
  sh[1].sh_type = SHT_STRTAB;
  sh[1].sh_offset = uint64_t{1} << 40;
  sh[1].sh_size = 16;
  std::memcpy(image.data() + eh.e_shoff, sh, sizeof(sh));
  const std::string before = image;
  ZeroAllButUnwindTables(&image);
  EXPECT_EQ(image, before);

  // The same table inside the image: the byte after the headers, in no kept section, is zeroed.
  sh[1].sh_offset = 0;
  std::memcpy(image.data() + eh.e_shoff, sh, sizeof(sh));
  ZeroAllButUnwindTables(&image);
  EXPECT_EQ(image.back(), '\0');
}

}  // namespace
}  // namespace nativeprof::unwind
