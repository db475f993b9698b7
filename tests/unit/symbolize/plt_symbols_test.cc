// PLT stubs get "name@plt" symbols, checked against objdump's own labels for the same binary.
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "symbolize/display_name.h"
#include "symbolize/symbol_table.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::RunCommand;
using ::nativeprof::testing::TargetPath;

// (address, "name@plt") for every PLT label objdump prints.
std::vector<std::pair<uint64_t, std::string>> ObjdumpPltLabels(const std::string& path) {
  std::vector<std::pair<uint64_t, std::string>> labels;
  testing::CommandResult r = RunCommand({"objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", path});
  std::istringstream in(r.out);
  const std::regex label(R"(^([0-9a-f]+) <([^>@]+)@plt>:)");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, label)) {
      labels.emplace_back(std::stoull(m[1].str(), nullptr, 16), m[2].str() + "@plt");
    }
  }
  return labels;
}

TEST(PltSymbolsTest, StubsAreNamedAsObjdumpNamesThem) {
  if (RunCommand({"objdump", "--version"}).exit_code != 0) GTEST_SKIP() << "objdump missing";
  for (const char* target : {"sym_prog_shared", "fp_split"}) {
    SCOPED_TRACE(target);
    const std::string path = TargetPath(target);
    auto labels = ObjdumpPltLabels(path);
    ASSERT_FALSE(labels.empty()) << "objdump shows no PLT labels in " << path;
    NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(path));
    SymbolTable table;
    EXPECT_EQ(table.AddPltSymbols(*elf), labels.size());
    table.Finish();
    for (const auto& [address, name] : labels) {
      const SymbolTable::Symbol* s = table.Lookup(address + 4);  // inside the stub
      ASSERT_NE(s, nullptr) << name;
      EXPECT_EQ(table.Name(*s), name);
      // Display names are demangled and keep the suffix ("_Znwm@plt" -> "operator new@plt").
      EXPECT_THAT(DisplayName(table.Name(*s), false), ::testing::EndsWith("@plt"));
    }
  }
}

}  // namespace
}  // namespace nativeprof::symbolize
