// Which name SymbolTable keeps for aliases at one address.
#include "symbolize/symbol_table.h"

#include "gtest/gtest.h"

namespace nativeprof::symbolize {
namespace {

std::string NameAt(const std::vector<std::pair<std::string, SymbolTable::Binding>>& aliases) {
  SymbolTable table;
  for (const auto& [name, binding] : aliases) table.Add(0x1000, 0x40, name, binding, 0);
  table.Finish();
  const SymbolTable::Symbol* s = table.Lookup(0x1010);
  return s == nullptr ? "" : std::string(table.Name(*s));
}

// glibc's .symtab as Debian's libc6-dbg has it: the name the program called, not the internal
// one it is an alias of.
TEST(SymbolTableTest, GlibcAliasesAreNamedAsTheProgramCalledThem) {
  using B = SymbolTable::Binding;
  EXPECT_EQ(NameAt({{"__libc_poll", B::kLocal}, {"__GI___poll", B::kLocal},
                    {"__poll", B::kGlobal}, {"poll", B::kWeak}}),
            "poll");
  EXPECT_EQ(NameAt({{"__GI___nanosleep", B::kLocal}, {"__nanosleep", B::kGlobal},
                    {"nanosleep", B::kWeak}}),
            "nanosleep");
  EXPECT_EQ(NameAt({{"__sleep", B::kLocal}, {"sleep", B::kWeak}}), "sleep");
  // A versioned exported name over the local ones without a version.
  EXPECT_EQ(NameAt({{"__GI___pthread_cond_wait", B::kLocal}, {"___pthread_cond_wait", B::kLocal},
                    {"pthread_cond_wait@@GLIBC_2.3.2", B::kGlobal}}),
            "pthread_cond_wait@@GLIBC_2.3.2");
  EXPECT_EQ(NameAt({{"___pthread_mutex_lock", B::kLocal},
                    {"__pthread_mutex_lock@GLIBC_2.2.5", B::kGlobal},
                    {"pthread_mutex_lock@@GLIBC_2.2.5", B::kGlobal}}),
            "pthread_mutex_lock@@GLIBC_2.2.5");
  // Exported over local even with more underscores (the kernel's _text over startup_64).
  EXPECT_EQ(NameAt({{"startup_64", B::kLocal}, {"_text", B::kGlobal}}), "_text");
}

}  // namespace
}  // namespace nativeprof::symbolize
