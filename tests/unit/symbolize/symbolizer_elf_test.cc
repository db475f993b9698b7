// Symbol lookup through the Symbolizer on ELFs the suite builds: PIE, non-PIE, a shared library,
// unnamed addresses, and the kernel via /proc/kallsyms.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolize/symbolizer.h"
#include "tests/testing/test_support.h"
#include "tests/unit/symbolize/sym_test_util.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::TargetPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using testing::Names;
using testing::RunAndLocate;
using testing::SymbolizeAt;

SymbolizerOptions NoDwarf() {
  SymbolizerOptions options;
  options.inline_frames = false;
  return options;
}

void ExpectBasicNames(const std::string& program) {
  auto locations = RunAndLocate(TargetPath(program));
  ASSERT_EQ(locations.count("main"), 1u) << program;
  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, NoDwarf());
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["sym_c_function"])),
              ElementsAre("sym_c_function"));
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["Worker<int>::Run"])),
              ElementsAre("symtest::Worker<int>::Run"));
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["WithCold"])),
              ElementsAre("symtest::WithCold"));
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["CallLambda"])),
              ElementsAre("CallLambda"));
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["main"])), ElementsAre("main"));
  SymbolizationStats stats = symbolizer->Stats();
  EXPECT_EQ(stats.addresses, 5u);
  EXPECT_EQ(stats.named, 5u);
}

TEST(SymbolizerElfTest, NamesFunctionsOfPieExecutable) { ExpectBasicNames("sym_prog"); }

TEST(SymbolizerElfTest, NamesFunctionsOfNonPieExecutable) { ExpectBasicNames("sym_prog_nopie"); }

TEST(SymbolizerElfTest, NamesFunctionsOfSharedLibrary) {
  auto locations = RunAndLocate(TargetPath("sym_prog_shared"));
  ASSERT_EQ(locations.count("sym_lib_function"), 1u);
  EXPECT_THAT(locations["sym_lib_function"].path, HasSubstr("libsym_lib.so"));
  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, NoDwarf());
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["sym_lib_function"])),
              ElementsAre("sym_lib_function"));
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["main"])), ElementsAre("main"));
}

TEST(SymbolizerElfTest, FullNamesKeepArguments) {
  auto locations = RunAndLocate(TargetPath("sym_prog"));
  sampler::ModuleRegistry registry;
  SymbolizerOptions options = NoDwarf();
  options.full_names = true;
  auto symbolizer = MakeSymbolizer(registry, options);
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["Worker<int>::Run"])),
              ElementsAre("symtest::Worker<int>::Run(int)"));
}

TEST(SymbolizerElfTest, AddressOutsideEverySymbolIsBracketedModule) {
  auto locations = RunAndLocate(TargetPath("sym_prog"));
  testing::Location loc = locations["main"];
  loc.file_offset = 0x10;  // ELF header: mapped, but in no function
  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, NoDwarf());
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, loc)), ElementsAre("[sym_prog]"));

  SymbolizerOptions options = NoDwarf();
  options.addresses = true;
  auto with_addresses = MakeSymbolizer(registry, options);
  EXPECT_THAT(Names(SymbolizeAt(*with_addresses, registry, loc)), ElementsAre("sym_prog+0x10"));
  SymbolizationStats stats = with_addresses->Stats();
  EXPECT_EQ(stats.named, 0u);
  ASSERT_THAT(stats.worst_modules, SizeIs(1));
  EXPECT_EQ(stats.worst_modules[0].unnamed, 1u);
}

TEST(SymbolizerElfTest, NoModuleIsUnknown) {
  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, NoDwarf());
  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUser(1, sampler::kNoModule, 0, 0x1234, &frames);
  symbolizer->SymbolizeUnmapped(1, 0x5678, UnmappedContext::kNone, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("[unknown]", "[unknown]"));
  EXPECT_EQ(symbolizer->Stats().named, 0u);
}

TEST(SymbolizerElfTest, MissingFileIsBracketedWithReason) {
  sampler::ModuleRegistry registry;
  sampler::ModuleInfo info;
  info.path = "/nonexistent/libgone.so.1";
  sampler::ModuleId id = registry.Intern(info);
  auto symbolizer = MakeSymbolizer(registry, NoDwarf());
  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUser(1, id, 0x1000, 0x7f0000001000, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("[libgone.so.1]"));
  SymbolizationStats stats = symbolizer->Stats();
  ASSERT_THAT(stats.worst_modules, SizeIs(1));
  EXPECT_THAT(stats.worst_modules[0].reason, HasSubstr("cannot read"));
}

TEST(SymbolizerElfTest, KernelAddressesNamedFromKallsyms) {
  std::string text = nativeprof::testing::ReadFileOrEmpty("/proc/kallsyms");
  size_t pos = text.find(" T schedule\n");
  if (pos == std::string::npos) pos = text.find(" T do_syscall_64\n");
  if (pos == std::string::npos) GTEST_SKIP() << "no well-known kernel symbol in /proc/kallsyms";
  size_t line_start = text.rfind('\n', pos) + 1;
  uint64_t addr = 0;
  ASSERT_TRUE(absl::SimpleHexAtoi(text.substr(line_start, pos - line_start), &addr));
  if (addr == 0) GTEST_SKIP() << "kallsyms addresses hidden (kptr_restrict)";
  std::string expected = text.substr(pos + 3, text.find('\n', pos) - pos - 3);

  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, NoDwarf());
  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeKernel(addr + 1, &frames);
  ASSERT_THAT(frames, SizeIs(1));
  EXPECT_EQ(frames[0].function, expected);
  EXPECT_EQ(frames[0].kind, ProfileFrameKind::kKernel);
}

}  // namespace
}  // namespace nativeprof::symbolize
