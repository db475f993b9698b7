// The compact per-boot kernel symbol index: it must name every address exactly as a SymbolTable
// built from the same kallsyms symbols does, and reject damaged images.
#include "symbolize/kernel_symbol_index.h"

#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/symbol_table.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::MakeTempDir;

struct Named {
  uint64_t start;
  std::string name;
  SymbolTable::Binding binding;
};

// The same symbols through SymbolTable (as kallsyms symbols: no sizes) and through the index.
struct Both {
  SymbolTable table;
  std::string bytes;
  explicit Both(const std::vector<Named>& symbols, std::vector<KernelRange> ranges) {
    std::vector<KernelSymbolInput> input;
    for (const Named& s : symbols) {
      table.Add(s.start, 0, s.name, s.binding);
      input.push_back(
          KernelSymbolInput{s.start, s.name, SymbolTable::AliasRank(s.name, s.binding)});
    }
    table.Finish();
    bytes = SerializeKernelSymbols(ranges, &input);
  }
  std::string TableName(uint64_t a) const {
    const SymbolTable::Symbol* s = table.Lookup(a);
    return s == nullptr ? "" : std::string(table.Name(*s));
  }
};

TEST(KernelSymbolIndexTest, NamesEveryAddressLikeASymbolTable) {
  // Out of order (module symbols are), aliases at one address, padding symbols before functions.
  const std::vector<Named> symbols = {
      {0xffffffffc0002000, "mod_b", SymbolTable::kLocal},
      {0xffffffff81000ff0, "__pfx_do_syscall_64", SymbolTable::kLocal},
      {0xffffffff81001000, "do_syscall_64", SymbolTable::kGlobal},
      {0xffffffff81000000, "_stext", SymbolTable::kGlobal},
      {0xffffffff81000000, "_text", SymbolTable::kGlobal},
      {0xffffffff81000000, "startup_64", SymbolTable::kLocal},
      {0xffffffff81001ff0, "__pfx_schedule", SymbolTable::kLocal},
      {0xffffffff81002000, "schedule", SymbolTable::kLocal},
      {0xffffffff81003000, "weak_thing", SymbolTable::kWeak},
      {0xffffffffc0001000, "mod_a", SymbolTable::kLocal},
      {0xffffffffc0001000, "__mod_a", SymbolTable::kGlobal},
  };
  Both both(symbols, {{0xffffffff81000000, 0xffffffff81005000},
                      {0xffffffffc0001000, 0xffffffffc0002001}});
  std::optional<KernelSymbolIndex> index = KernelSymbolIndex::Open(both.bytes);
  ASSERT_TRUE(index.has_value());
  EXPECT_EQ(index->size(), both.table.size());
  for (uint64_t a = 0xffffffff80fff000; a < 0xffffffff81006000; a += 8) {
    EXPECT_EQ(std::string(index->Lookup(a)), both.TableName(a)) << std::hex << a;
  }
  for (uint64_t a = 0xffffffffc0000f00; a < 0xffffffffc0003100; a += 8) {
    EXPECT_EQ(std::string(index->Lookup(a)), both.TableName(a)) << std::hex << a;
  }
  EXPECT_EQ(index->Lookup(0xffffffff81000ff4), "__pfx_do_syscall_64");
  EXPECT_EQ(index->Lookup(0xffffffff81001004), "do_syscall_64");
  EXPECT_EQ(index->Lookup(0xffffffff81000004), "_text");
  EXPECT_EQ(index->Lookup(0xffffffffc0001004), "__mod_a");
  // The padding symbol's name holds its function's: stored once.
  EXPECT_EQ(both.bytes.find("schedule"), both.bytes.find("__pfx_schedule") + 6);

  EXPECT_TRUE(index->InRange(0xffffffff81000000));
  EXPECT_TRUE(index->InRange(0xffffffff81004fff));
  EXPECT_FALSE(index->InRange(0xffffffff81005000));
  EXPECT_TRUE(index->InRange(0xffffffffc0002000));
  EXPECT_FALSE(index->InRange(0xffffffffc0002001));
  EXPECT_FALSE(index->InRange(0xffffffff80000000));
}

TEST(KernelSymbolIndexTest, DamagedImagesAreRejectedOrReadInBounds) {
  std::vector<KernelSymbolInput> input = {{0x1000, "a", 0}, {0x2000, "b", 0}, {0x3000, "c", 0}};
  const std::string bytes = SerializeKernelSymbols({{0x1000, 0x4000}}, &input);
  ASSERT_TRUE(KernelSymbolIndex::Open(bytes).has_value());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(KernelSymbolIndex::Open(bytes.substr(0, cut)).has_value()) << cut;
  }
  EXPECT_FALSE(KernelSymbolIndex::Open(bytes + "x").has_value());
  // A name offset pointing past the names, and names without their terminator.
  std::string bad = bytes;
  const size_t offsets_at = 32 + 16 + 3 * 8;
  bad[offsets_at + 4] = static_cast<char>(0x7f);
  std::optional<KernelSymbolIndex> damaged = KernelSymbolIndex::Open(bad);
  ASSERT_TRUE(damaged.has_value());
  EXPECT_EQ(damaged->Lookup(0x2000), "");
  EXPECT_EQ(damaged->Lookup(0x1000), "a");
  std::string unterminated = bytes;
  unterminated.back() = 'x';
  damaged = KernelSymbolIndex::Open(unterminated);
  ASSERT_TRUE(damaged.has_value());
  EXPECT_EQ(damaged->Lookup(0x3000), "");
  // Counts whose byte sizes wrap 64 bits (2^60 ranges of 16 bytes, 2^62 symbols of 12) and
  // would then fit the file, each with the names size that arithmetic would expect.
  for (const auto& [ranges, symbols] : {std::pair<uint64_t, uint64_t>{uint64_t{1} << 60, 3},
                                        std::pair<uint64_t, uint64_t>{1, uint64_t{1} << 62}}) {
    std::string lying = bytes;
    std::memcpy(lying.data() + 8, &ranges, 8);
    std::memcpy(lying.data() + 16, &symbols, 8);
    const uint64_t wrapped_names = (lying.size() - 32) - ranges * 16 - symbols * 12;
    std::memcpy(lying.data() + 24, &wrapped_names, 8);
    EXPECT_FALSE(KernelSymbolIndex::Open(lying).has_value()) << ranges << " " << symbols;
  }
  // Ranges out of order.
  std::vector<KernelSymbolInput> again = {{0x1000, "a", 0}};
  EXPECT_FALSE(
      KernelSymbolIndex::Open(SerializeKernelSymbols({{0x5000, 0x6000}, {0x1000, 0x2000}}, &again))
          .has_value());
}

// This machine's kallsyms, when readable: the cached index names every core text address as the
// whole parsed kallsyms does.
TEST(KernelSymbolIndexTest, CachedIndexAgreesWithTheLiveKallsyms) {
  absl::StatusOr<SymbolTable> live = LoadKallsyms();
  if (!live.ok()) GTEST_SKIP() << live.status();
  // The core text bounds, from the text (aliases at one address keep only one name in `live`).
  const std::string text = ::nativeprof::testing::ReadFileOrEmpty("/proc/kallsyms");
  auto address_of = [&text](const std::string& name) -> uint64_t {
    const size_t at = text.find(" T " + name + "\n");
    if (at == std::string::npos) return 0;
    const size_t line = text.rfind('\n', at);
    return std::stoull(text.substr(line == std::string::npos ? 0 : line + 1, 16), nullptr, 16);
  };
  const uint64_t stext = address_of("_stext");
  const uint64_t etext = address_of("_etext");
  if (stext == 0 || etext <= stext) GTEST_SKIP() << "no _stext/_etext in kallsyms";
  CacheDir cache(MakeTempDir());
  KernelSymbols first(cache);
  first.Lookup(stext);
  KernelSymbols second(cache);
  std::mt19937_64 rng(7);
  size_t compared = 0;
  for (const SymbolTable::Symbol& s : live->symbols()) {
    if (s.start < stext || s.start >= etext) continue;
    for (uint64_t a : {s.start, s.start + rng() % s.size}) {
      ASSERT_EQ(second.Lookup(a), live->Name(*live->Lookup(a))) << std::hex << a;
      ++compared;
    }
  }
  EXPECT_FALSE(second.read_live());
  EXPECT_GT(compared, 1000u);
}

}  // namespace
}  // namespace nativeprof::symbolize
