// Rust programs built on this machine (legacy and v0 mangling): the symbolizer shows demangled
// Rust paths with generics and closures. Skips when rustc was not found at configure time.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "symbolize/module_symbols.h"
#include "symbolize/symbolizer.h"
#include "tests/testing/test_support.h"
#include "tests/unit/symbolize/sym_test_util.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::TargetPath;
using ::testing::Contains;
using ::testing::HasSubstr;

// Names every function of `program` through the Symbolizer (at an offset inside each symbol) and
// returns the names of the program's own crate.
std::vector<std::string> CrateFunctionNames(const std::string& program) {
  auto opened = module::ElfImage::Open(program);
  EXPECT_TRUE(opened.ok()) << opened.status();
  if (!opened.ok()) return {};
  auto elf = std::move(*opened);
  ModuleLoadOptions load;
  load.dwarf = false;
  auto symbols = ModuleSymbols::Load(std::move(elf), program, load);
  sampler::ModuleRegistry registry;
  sampler::ModuleInfo info;
  info.path = program;
  sampler::ModuleId id = registry.Intern(info);
  SymbolizerOptions options;
  options.inline_frames = false;
  auto symbolizer = MakeSymbolizer(registry, options);
  std::vector<std::string> names;
  for (const SymbolTable::Symbol& s : symbols->table().symbols()) {
    if (!absl::StrContains(symbols->table().Name(s), "sym_rust")) continue;
    for (const module::LoadSegment& seg : symbols->file().loads()) {
      if (s.start < seg.vaddr || s.start >= seg.vaddr + seg.filesz) continue;
      std::vector<SymbolizedFrame> frames;
      symbolizer->SymbolizeUser(0, id, s.start - seg.vaddr + seg.offset, 0, &frames);
      for (const SymbolizedFrame& f : frames) names.push_back(f.function);
    }
  }
  return names;
}


TEST(SymbolizerRustTest, LegacyManglingDemangled) {
  std::string program = TargetPath("sym_rust_legacy");
  if (!std::filesystem::exists(program)) {
    GTEST_SKIP() << "rustc not found at configure time (looked in PATH and ~/.cargo/bin)";
  }
  std::vector<std::string> names = CrateFunctionNames(program);
  EXPECT_THAT(names, Contains("sym_rust::Matrix<T>::sum"));
  EXPECT_THAT(names, Contains(HasSubstr("sym_rust::main::{{closure}}")));
  EXPECT_THAT(names, Contains("sym_rust::apply"));
  for (const std::string& n : names) EXPECT_THAT(n, ::testing::Not(HasSubstr("::h"))) << n;
}

TEST(SymbolizerRustTest, V0ManglingDemangled) {
  std::string program = TargetPath("sym_rust_v0");
  if (!std::filesystem::exists(program)) {
    GTEST_SKIP() << "rustc not found at configure time (looked in PATH and ~/.cargo/bin)";
  }
  std::vector<std::string> names = CrateFunctionNames(program);
  EXPECT_THAT(names, Contains("<sym_rust::Matrix<f32>>::sum"));
  EXPECT_THAT(names, Contains(HasSubstr("sym_rust::main::{closure#")));
  EXPECT_THAT(names, Contains(HasSubstr("sym_rust::apply::<sym_rust::main::{closure#")));
}

// What BuiltWithoutOptimization says of `program`, with its evidence.
bool DebugBuild(const std::string& program, std::string* evidence) {
  auto opened = module::ElfImage::Open(program);
  EXPECT_TRUE(opened.ok()) << opened.status();
  if (!opened.ok()) return false;
  auto symbols = ModuleSymbols::Load(std::move(*opened), program, ModuleLoadOptions());
  EXPECT_NE(symbols->dwarf(), nullptr) << program;
  return symbols->dwarf() != nullptr && symbols->dwarf()->BuiltWithoutOptimization(evidence);
}

// rustc inlines #[inline(always)] functions even at opt-level 0 (sym_rust_O0 has inlined calls
// in its own unit), so it is told by where its variables live: the frame, in a debug build.
TEST(SymbolizerRustTest, DebugBuildIsToldFromOptimizedOnes) {
  const std::string debug = TargetPath("sym_rust_O0");
  if (!std::filesystem::exists(debug)) {
    GTEST_SKIP() << "rustc not found at configure time (looked in PATH and ~/.cargo/bin)";
  }
  std::string evidence;
  EXPECT_TRUE(DebugBuild(debug, &evidence));
  EXPECT_THAT(evidence, HasSubstr("variables in the stack frame (a debug build)"));
  for (const char* optimized : {"sym_rust_legacy", "sym_rust_v0"}) {
    evidence.clear();
    EXPECT_FALSE(DebugBuild(TargetPath(optimized), &evidence)) << optimized << ": " << evidence;
  }
}

}  // namespace
}  // namespace nativeprof::symbolize
