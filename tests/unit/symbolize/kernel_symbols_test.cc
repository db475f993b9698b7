// Kernel symbols: kallsyms parsing, the per-boot cache of stable symbols, and the live fallback
// for dynamic code. Uses kallsyms-like files of its own, so it runs without root.
#include "symbolize/kernel_symbols.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::MakeTempDir;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// A core kernel, one module and a BPF program, in kallsyms order.
constexpr char kKallsyms[] =
    "0000000000000000 A fixed_percpu_data\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81001000 T do_syscall_64\n"
    "ffffffff81002000 t schedule\n"
    "ffffffff81003000 W weak_thing\n"
    "ffffffff81004000 D some_data\n"
    "ffffffff81005000 T _etext\n"
    "ffffffffc0001000 t ext4_read\t[ext4]\n"
    "ffffffffc0002000 T ext4_write\t[ext4]\n"
    "ffffffffc0003000 t bpf_prog_0123456789abcdef_probe\t[bpf]\n";
constexpr char kModules[] = "ext4 798720 1 - Live 0xffffffffc0000000\n";

struct FakeKernel {
  std::string dir = MakeTempDir();
  KernelSources sources;
  FakeKernel() {
    sources.kallsyms = dir + "/kallsyms";
    sources.modules = dir + "/modules";
    sources.boot_id = dir + "/boot_id";
    WriteFile(sources.kallsyms, kKallsyms);
    WriteFile(sources.modules, kModules);
    WriteFile(sources.boot_id, "30bab8c9-deb8-4155-adc8-0f8e70d47805\n");
  }
  size_t CacheEntries(const CacheDir& cache) const {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(cache.root() + "/kernel", ec)) {
      (void)e;
      ++n;
    }
    return n;
  }
};

TEST(ParseKallsymsTest, KeepsTextSymbolsAndBoundsThemByTheNext) {
  NP_ASSERT_OK_AND_ASSIGN(SymbolTable table, ParseKallsyms(kKallsyms));
  const SymbolTable::Symbol* s = table.Lookup(0xffffffff81002010);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(table.Name(*s), "schedule");
  s = table.Lookup(0xffffffffc0001fff);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(table.Name(*s), "ext4_read");
  // Aliases at one address: the global one without underscores wins over _stext/_text.
  EXPECT_EQ(table.Name(*table.Lookup(0xffffffff81000010)), "_text");
}

TEST(ParseKallsymsTest, HiddenAddressesArePermissionDenied) {
  absl::StatusOr<SymbolTable> t = ParseKallsyms("0000000000000000 T schedule\n");
  EXPECT_TRUE(absl::IsPermissionDenied(t.status())) << t.status();
  EXPECT_TRUE(absl::IsInvalidArgument(ParseKallsyms("garbage\n").status()));
}

// /proc/PID/stack names frames "function+offset": placed at the symbol of that name that is long
// enough (two static functions may share one), or kept where the kernel showed an address.
TEST(ResolveKernelFramesTest, PlacesNamedFramesAtTheSymbolLongEnough) {
  NP_ASSERT_OK_AND_ASSIGN(SymbolTable table, ParseKallsyms("ffffffff81001000 t helper\n"
                                                           "ffffffff81001040 T other\n"
                                                           "ffffffff81002000 t helper\n"
                                                           "ffffffff81002400 T next\n"));
  const std::vector<sampler::KernelFrameName> frames = {
      {"helper", 0x20, 0}, {"helper", 0x100, 0}, {"missing", 0x10, 0},
      {"other", 0x5, 0xffffffff90000000}};
  EXPECT_THAT(ResolveKernelFrames(table, frames),
              ::testing::ElementsAre(0xffffffff81001020u, 0xffffffff81002100u, 0u,
                                     0xffffffff90000000u));
  EXPECT_TRUE(ResolveKernelFrames(table, {}).empty());
}

TEST(LoadKallsymsTest, SourceThatNeverEndsIsRefusedAtTheLimit) {
  // /dev/zero stands for a kallsyms path that keeps producing bytes.
  absl::StatusOr<SymbolTable> table = LoadKallsyms("/dev/zero");
  EXPECT_TRUE(absl::IsResourceExhausted(table.status())) << table.status();
}

TEST(KernelSymbolsTest, WithoutACacheEveryInstanceReadsKallsyms) {
  FakeKernel k;
  KernelSymbols symbols(std::nullopt, k.sources);
  EXPECT_EQ(symbols.Lookup(0xffffffff81001004), "do_syscall_64");
  EXPECT_TRUE(symbols.read_live());
  NP_EXPECT_OK(symbols.status());
}

TEST(KernelSymbolsTest, SecondRunOfTheBootNamesCoreAndModuleFramesFromTheCache) {
  FakeKernel k;
  CacheDir cache(MakeTempDir());
  {
    KernelSymbols first(cache, k.sources);
    EXPECT_EQ(first.Lookup(0xffffffff81002004), "schedule");
    EXPECT_TRUE(first.read_live());
  }
  EXPECT_EQ(k.CacheEntries(cache), 1u);
  // The live file goes away: only the cache can answer now.
  std::filesystem::remove(k.sources.kallsyms);
  KernelSymbols second(cache, k.sources);
  EXPECT_EQ(second.Lookup(0xffffffff81002004), "schedule");
  EXPECT_EQ(second.Lookup(0xffffffff81003008), "weak_thing");
  EXPECT_EQ(second.Lookup(0xffffffffc0001010), "ext4_read");
  EXPECT_EQ(second.Lookup(0xffffffffc0002000), "ext4_write");
  EXPECT_FALSE(second.read_live());
}

TEST(KernelSymbolsTest, DynamicCodeOutsideStableRangesIsReadLive) {
  FakeKernel k;
  CacheDir cache(MakeTempDir());
  KernelSymbols(cache, k.sources).Lookup(0xffffffff81002004);
  // A BPF program is not in the cache (it may have been replaced since): the live kallsyms, which
  // now holds a different program at that address, names it.
  std::string text = kKallsyms;
  text.replace(text.find("bpf_prog_0123456789abcdef_probe"), 31, "bpf_prog_fedcba9876543210_other");
  WriteFile(k.sources.kallsyms, text);
  KernelSymbols second(cache, k.sources);
  EXPECT_EQ(second.Lookup(0xffffffff81001000), "do_syscall_64");
  EXPECT_FALSE(second.read_live());
  EXPECT_EQ(second.Lookup(0xffffffffc0003004), "bpf_prog_fedcba9876543210_other");
  EXPECT_TRUE(second.read_live());
}

TEST(KernelSymbolsTest, NewBootOrChangedModulesMissTheCache) {
  FakeKernel k;
  CacheDir cache(MakeTempDir());
  KernelSymbols(cache, k.sources).Lookup(0xffffffff81002004);
  // Reference counts change constantly and must not invalidate the entry.
  WriteFile(k.sources.modules, "ext4 798720 7 - Live 0xffffffffc0000000\n");
  {
    KernelSymbols same(cache, k.sources);
    same.Lookup(0xffffffff81002004);
    EXPECT_FALSE(same.read_live());
  }
  WriteFile(k.sources.modules, "ext4 798720 1 - Live 0xffffffffc0100000\n");
  {
    KernelSymbols moved(cache, k.sources);
    moved.Lookup(0xffffffff81002004);
    EXPECT_TRUE(moved.read_live());
  }
  WriteFile(k.sources.boot_id, "00000000-0000-0000-0000-000000000000\n");
  {
    KernelSymbols rebooted(cache, k.sources);
    rebooted.Lookup(0xffffffff81002004);
    EXPECT_TRUE(rebooted.read_live());
  }
  EXPECT_EQ(k.CacheEntries(cache), 3u);
}

TEST(KernelSymbolsTest, DamagedCacheEntryIsRebuilt) {
  FakeKernel k;
  CacheDir cache(MakeTempDir());
  KernelSymbols(cache, k.sources).Lookup(0xffffffff81002004);
  std::string entry;
  for (const auto& e : std::filesystem::directory_iterator(cache.root() + "/kernel")) {
    entry = e.path();
  }
  std::string bytes = ::nativeprof::testing::ReadFileOrEmpty(entry);
  ASSERT_GT(bytes.size(), 100u);
  for (size_t cut : {size_t{3}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    WriteFile(entry, bytes.substr(0, cut));
    KernelSymbols again(cache, k.sources);
    EXPECT_EQ(again.Lookup(0xffffffff81002004), "schedule") << cut;
    EXPECT_TRUE(again.read_live()) << cut;
  }
  // The last rebuild left a good entry behind.
  KernelSymbols last(cache, k.sources);
  EXPECT_EQ(last.Lookup(0xffffffff81002004), "schedule");
  EXPECT_FALSE(last.read_live());
}

TEST(KernelSymbolsTest, HiddenAddressesGiveAReasonAndNoCacheEntry) {
  FakeKernel k;
  WriteFile(k.sources.kallsyms, "0000000000000000 T schedule\n0000000000000000 T do_syscall_64\n");
  CacheDir cache(MakeTempDir());
  KernelSymbols symbols(cache, k.sources);
  EXPECT_EQ(symbols.Lookup(0xffffffff81002004), "");
  EXPECT_TRUE(absl::IsPermissionDenied(symbols.status())) << symbols.status();
  EXPECT_EQ(k.CacheEntries(cache), 0u);
}

}  // namespace
}  // namespace nativeprof::symbolize
