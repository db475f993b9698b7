// The symbolizer's other name sources: separate debug files (build-id, debuglink with CRC),
// MiniDebugInfo, compressed DWARF, DWARF inline frames and lines, libc through libc6-dbg, the -O0
// warning, perf maps, the vdso, and a binary deleted while it runs.
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "module/elf_image.h"
#include "symbolize/module_symbols.h"
#include "symbolize/symbolizer.h"
#include "tests/testing/test_support.h"
#include "tests/unit/symbolize/sym_test_util.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::TargetPath;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::Location;
using testing::Names;
using testing::RunAndLocate;
using testing::SymbolizeAt;

// Locations printed by sym_prog, moved onto another build of the same program (same code layout:
// the variants are copies of sym_prog with sections removed or added).
std::map<std::string, Location> LocationsIn(const std::string& variant) {
  auto locations = RunAndLocate(TargetPath("sym_prog"));
  for (auto& [name, loc] : locations) loc.path = TargetPath(variant);
  return locations;
}

SymbolizerOptions OnlyNames() {
  SymbolizerOptions options;
  options.inline_frames = false;
  options.debug_dirs = {};
  return options;
}

TEST(SymbolizerSourcesTest, StrippedBinaryWithoutDebugFileIsBracketed) {
  auto locations = LocationsIn("sym_prog_stripped");
  std::string dir = MakeTempDir();
  std::string copy = dir + "/sym_prog_stripped";
  std::filesystem::copy_file(TargetPath("sym_prog_stripped"), copy);
  Location loc = locations["sym_c_function"];
  loc.path = copy;  // no .debug/ next to it, no debug root: nothing to find
  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, OnlyNames());
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, loc)), ElementsAre("[sym_prog_stripped]"));
  SymbolizationStats stats = symbolizer->Stats();
  ASSERT_THAT(stats.worst_modules, SizeIs(1));
  EXPECT_THAT(stats.worst_modules[0].reason, HasSubstr("no debug file found"));
  EXPECT_THAT(stats.worst_modules[0].advice, HasSubstr("dbg"));
}

TEST(SymbolizerSourcesTest, DebugFileFoundByBuildId) {
  auto locations = LocationsIn("sym_prog_stripped");
  std::string dir = MakeTempDir();
  std::string copy = dir + "/sym_prog_stripped";  // away from its .debug/ directory
  std::filesystem::copy_file(TargetPath("sym_prog_stripped"), copy);
  NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(copy));
  ModuleLoadOptions load;
  load.debug_dirs = {TargetPath("sym-debug-root")};
  auto symbols = ModuleSymbols::Load(std::move(elf), copy, load);
  EXPECT_EQ(symbols->source(), NameSource::kDebugFile);
  EXPECT_EQ(symbols->debug_file_how(), "build-id");

  Location loc = locations["Worker<int>::Run"];
  loc.path = copy;
  sampler::ModuleRegistry registry;
  SymbolizerOptions options = OnlyNames();
  options.debug_dirs = {TargetPath("sym-debug-root")};
  auto symbolizer = MakeSymbolizer(registry, options);
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, loc)),
              ElementsAre("symtest::Worker<int>::Run"));
}

TEST(SymbolizerSourcesTest, DebugFileFoundByDebuglinkInDotDebug) {
  auto locations = LocationsIn("sym_prog_stripped");
  NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(TargetPath("sym_prog_stripped")));
  auto symbols = ModuleSymbols::Load(std::move(elf), TargetPath("sym_prog_stripped"), {{}, false});
  EXPECT_EQ(symbols->source(), NameSource::kDebugFile);
  EXPECT_EQ(symbols->debug_file_how(), "debuglink");
  EXPECT_THAT(symbols->debug_file(), HasSubstr("/.debug/sym_prog_stripped.debug"));

  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, OnlyNames());
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["sym_c_function"])),
              ElementsAre("sym_c_function"));
}

TEST(SymbolizerSourcesTest, DebuglinkWithWrongCrcIsIgnored) {
  auto locations = LocationsIn("sym_prog_stripped");
  std::string dir = MakeTempDir();
  std::filesystem::create_directory(dir + "/.debug");
  std::string copy = dir + "/sym_prog_stripped";
  std::filesystem::copy_file(TargetPath("sym_prog_stripped"), copy);
  std::string debug = dir + "/.debug/sym_prog_stripped.debug";
  std::filesystem::copy_file(TargetPath(".debug/sym_prog_stripped.debug"), debug);
  {
    std::ofstream append(debug, std::ios::app | std::ios::binary);
    append << "changed";  // the CRC no longer matches
  }
  Location loc = locations["sym_c_function"];
  loc.path = copy;
  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, OnlyNames());
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, loc)), ElementsAre("[sym_prog_stripped]"));
}

TEST(SymbolizerSourcesTest, MiniDebugInfoNamesStrippedBinary) {
  auto locations = LocationsIn("sym_prog_minidebug");
  NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(TargetPath("sym_prog_minidebug")));
  EXPECT_FALSE(elf->HasSectionData(".symtab"));
  auto symbols = ModuleSymbols::Load(std::move(elf), TargetPath("sym_prog_minidebug"), {{}, false});
  EXPECT_EQ(symbols->source(), NameSource::kMiniDebugInfo);

  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, OnlyNames());
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["Worker<int>::Run"])),
              ElementsAre("symtest::Worker<int>::Run"));
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, locations["sym_c_function"])),
              ElementsAre("sym_c_function"));
}

// Scans the function `caller` (InlineCaller) for an address inside what it inlined.
std::vector<SymbolizedFrame> FindInlinedChain(const std::string& variant, bool lines,
                                              const std::string& caller = "InlineCaller",
                                              const std::string& path = "") {
  auto locations = LocationsIn(variant);
  Location loc = locations[caller];
  if (!path.empty()) loc.path = path;
  sampler::ModuleRegistry registry;
  SymbolizerOptions options;
  options.lines = lines;
  auto symbolizer = MakeSymbolizer(registry, options);
  for (uint64_t delta = 0; delta < 64; ++delta) {
    Location at = loc;
    at.file_offset += delta;
    std::vector<SymbolizedFrame> frames = SymbolizeAt(*symbolizer, registry, at);
    if (frames.size() >= 2) return frames;
  }
  return {};
}

TEST(SymbolizerSourcesTest, InlinedCodeBecomesChainOfInlinedFrames) {
  for (const char* variant :
       {"sym_prog", "sym_prog_zlib", "sym_prog_zstd", "sym_prog_split", "sym_prog_split4"}) {
    if (!std::filesystem::exists(TargetPath(variant))) continue;  // objcopy without zstd
    SCOPED_TRACE(variant);
    NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(TargetPath(variant)));
    // zlib through libelf, zstd through nativeprof's own decompression (elfutils 0.188 has none).
    NP_ASSERT_OK(elf->SectionData(".debug_info"));
    std::vector<SymbolizedFrame> frames = FindInlinedChain(variant, /*lines=*/false);
    ASSERT_THAT(frames, SizeIs(2));
    EXPECT_EQ(frames[0].function, "symtest::InlinedHelper");
    EXPECT_EQ(frames[0].kind, ProfileFrameKind::kInlined);
    EXPECT_EQ(frames[1].function, "symtest::InlineCaller");
    EXPECT_EQ(frames[1].kind, ProfileFrameKind::kUser);
    EXPECT_THAT(frames[0].file, IsEmpty());  // no --lines
  }
}

// The .dwo file of a split unit is named by the binary: where one of the files libdw would open
// for it is a FIFO (or a device), the split unit is not looked for. libdw's open of the FIFO
// blocked the profiler for good.
TEST(SymbolizerSourcesTest, ASplitUnitWhoseFileIsAFifoIsNotOpened) {
  // The skeleton's relative dwo name, looked for first beside the binary (libdw's debugdir).
  NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(TargetPath("sym_prog_split")));
  Dwarf* dwarf = dwarf_begin_elf(elf->elf(), DWARF_C_READ, nullptr);
  ASSERT_NE(dwarf, nullptr);
  Dwarf_Off next = 0;
  size_t header_size = 0;
  ASSERT_EQ(dwarf_next_unit(dwarf, 0, &next, &header_size, nullptr, nullptr, nullptr, nullptr,
                            nullptr, nullptr),
            0);
  Dwarf_Die cu;
  ASSERT_NE(dwarf_offdie(dwarf, header_size, &cu), nullptr);  // the first unit's DIE
  Dwarf_Attribute attr;
  const char* dwo = dwarf_formstring(dwarf_attr(&cu, DW_AT_dwo_name, &attr));
  ASSERT_NE(dwo, nullptr);
  const std::string dwo_name = dwo;
  dwarf_end(dwarf);
  ASSERT_NE(dwo_name[0], '/');
  const std::string dir = MakeTempDir();
  const std::string copy = dir + "/sym_prog_split";
  std::filesystem::copy_file(TargetPath("sym_prog_split"), copy);
  const std::string fifo = absl::StrCat(dir, "/", dwo_name);
  std::filesystem::create_directories(std::filesystem::path(fifo).parent_path());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Returns (without the split unit's inline frames) instead of blocking in open().
  EXPECT_THAT(FindInlinedChain("sym_prog_split", /*lines=*/false, "InlineCaller", copy),
              IsEmpty());
}

// An inlined lambda is named after the function it is declared in, as c++filt names lambdas
// (`f()::{lambda(int)#1}::operator()`); it was `(anonymous namespace)::operator()`.
TEST(SymbolizerSourcesTest, InlinedLambdaIsNamedAfterItsFunction) {
  std::vector<SymbolizedFrame> frames =
      FindInlinedChain("sym_prog", /*lines=*/false, "InlinedLambdaCaller");
  ASSERT_THAT(frames, SizeIs(2));
  EXPECT_EQ(frames[0].function, "symtest::InlinedLambdaCaller::{lambda}::operator()");
  EXPECT_EQ(frames[0].kind, ProfileFrameKind::kInlined);
  EXPECT_EQ(frames[1].function, "symtest::InlinedLambdaCaller");
}

TEST(SymbolizerSourcesTest, LinesGiveSourcePositions) {
  // Split DWARF: the line table stays in the binary, the call sites are in the .dwo.
  for (const char* variant : {"sym_prog", "sym_prog_split", "sym_prog_split4"}) {
    SCOPED_TRACE(variant);
    std::vector<SymbolizedFrame> frames = FindInlinedChain(variant, /*lines=*/true);
    ASSERT_THAT(frames, SizeIs(2));
    EXPECT_THAT(frames[0].file, HasSubstr("sym_prog.cc"));
    EXPECT_THAT(frames[1].file, HasSubstr("sym_prog.cc"));
    EXPECT_GT(frames[0].line, 0u);
    EXPECT_GT(frames[1].line, 0u);
    EXPECT_NE(frames[0].line, frames[1].line);  // the loop body vs the call site
  }
}

TEST(SymbolizerSourcesTest, NoInlineGivesOnlyTheRealFunction) {
  auto locations = LocationsIn("sym_prog");
  sampler::ModuleRegistry registry;
  SymbolizerOptions options;
  options.inline_frames = false;
  auto symbolizer = MakeSymbolizer(registry, options);
  for (uint64_t delta = 0; delta < 64; ++delta) {
    Location at = locations["InlineCaller"];
    at.file_offset += delta;
    EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, at)),
                ElementsAre("symtest::InlineCaller"));
  }
}

TEST(SymbolizerSourcesTest, ColdCloneKeepsParentNameAndCloneSuffix) {
  NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(TargetPath("sym_prog")));
  std::string path = TargetPath("sym_prog");
  auto symbols = ModuleSymbols::Load(std::move(elf), path, {{}, false});
  const SymbolTable::Symbol* cold = nullptr;
  for (const SymbolTable::Symbol& s : symbols->table().symbols()) {
    if (symbols->table().Name(s) == "_ZN7symtest8WithColdEi.cold") cold = &s;
  }
  ASSERT_NE(cold, nullptr) << "GCC did not split WithCold into a .cold part";
  EXPECT_EQ(symbols->DisplayNameOf(symbols->Lookup(cold->start + 1), false),
            "symtest::WithCold [clone .cold]");
}

// A producer without the compiler's flags (clang's default, GCC's -gno-record-gcc-switches)
// proves nothing: the variables' locations tell, nearly all in the frame at -O0.
TEST(SymbolizerSourcesTest, UnoptimizedProgramIsToldWithoutItsFlags) {
  auto built_without_optimization = [](const std::string& program, std::string* evidence) {
    auto opened = module::ElfImage::Open(program);
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (!opened.ok()) return false;
    auto symbols = ModuleSymbols::Load(std::move(*opened), program, ModuleLoadOptions());
    return symbols->dwarf() != nullptr && symbols->dwarf()->BuiltWithoutOptimization(evidence);
  };
  std::string evidence;
  EXPECT_TRUE(built_without_optimization(TargetPath("sym_prog_O0_silent"), &evidence));
  EXPECT_THAT(evidence, HasSubstr("variables in the stack frame (a debug build)"));
  evidence.clear();
  EXPECT_FALSE(built_without_optimization(TargetPath("sym_prog_O2_silent"), &evidence))
      << evidence;
}

TEST(SymbolizerSourcesTest, UnoptimizedProgramIsWarnedOnce) {
  auto locations = RunAndLocate(TargetPath("sym_prog_O0"));
  sampler::ModuleRegistry registry;
  auto symbolizer = MakeSymbolizer(registry, SymbolizerOptions());
  SymbolizeAt(*symbolizer, registry, locations["main"]);
  SymbolizeAt(*symbolizer, registry, locations["sym_c_function"]);
  std::vector<std::string> warnings = symbolizer->Stats().warnings;
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("without optimization"));

  auto optimized = RunAndLocate(TargetPath("sym_prog"));
  auto other = MakeSymbolizer(registry, SymbolizerOptions());
  SymbolizeAt(*other, registry, optimized["main"]);
  EXPECT_THAT(other->Stats().warnings, IsEmpty());
}

TEST(SymbolizerSourcesTest, LibcNamedThroughLibc6Dbg) {
  Dl_info info;
  void* fn = dlsym(RTLD_DEFAULT, "qsort");
  ASSERT_NE(fn, nullptr);
  ASSERT_NE(dladdr(fn, &info), 0);
  std::string libc = info.dli_fname;
  NP_ASSERT_OK_AND_ASSIGN(auto elf, module::ElfImage::Open(libc));
  std::string id = elf->build_id();
  std::string debug = absl::StrCat("/usr/lib/debug/.build-id/", id.substr(0, 2), "/",
                                   id.substr(2), ".debug");
  if (!std::filesystem::exists(debug)) GTEST_SKIP() << "libc6-dbg not installed (" << debug << ")";
  ModuleLoadOptions load;
  load.dwarf = false;
  auto symbols = ModuleSymbols::Load(std::move(elf), libc, load);
  EXPECT_EQ(symbols->source(), NameSource::kDebugFile);
  // A local function that .dynsym does not export: only the debug file can name it.
  const SymbolTable::Symbol* found = nullptr;
  for (const SymbolTable::Symbol& s : symbols->table().symbols()) {
    if (absl::StartsWith(symbols->table().Name(s), "msort_with_tmp")) found = &s;
  }
  ASSERT_NE(found, nullptr);

  // Through the Symbolizer with a file offset of that function.
  uint64_t offset = 0;
  bool mapped = false;
  for (const module::LoadSegment& seg : symbols->file().loads()) {
    if (found->start >= seg.vaddr && found->start < seg.vaddr + seg.filesz) {
      offset = found->start - seg.vaddr + seg.offset + 4;
      mapped = true;
    }
  }
  ASSERT_TRUE(mapped);
  sampler::ModuleRegistry registry;
  SymbolizerOptions options;
  auto symbolizer = MakeSymbolizer(registry, options);
  EXPECT_THAT(Names(SymbolizeAt(*symbolizer, registry, Location{libc, offset, 0})),
              Contains(HasSubstr("msort_with_tmp")));
}

TEST(SymbolizerSourcesTest, JitFramesFromPerfMap) {
  std::string dir = MakeTempDir();
  {
    std::ofstream map(dir + "/perf-4242.map");
    map << "7f0000001000 100 jit_compiled_add\n"
        << "garbage line\n"
        << "0x7f0000002000 0x80 LazyCompile:*fib script.js:3\n";
  }
  sampler::ModuleRegistry registry;
  SymbolizerOptions options;
  options.perf_map_dir = dir;
  auto symbolizer = MakeSymbolizer(registry, options);
  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUnmapped(4242, 0x7f0000001080, UnmappedContext::kNone, &frames);
  symbolizer->SymbolizeUnmapped(4242, 0x7f000000207f, UnmappedContext::kNone, &frames);
  symbolizer->SymbolizeUnmapped(4242, 0x7f0000002080, UnmappedContext::kNone, &frames);
  symbolizer->SymbolizeUnmapped(4243, 0x7f0000001080, UnmappedContext::kNone, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("jit_compiled_add", "LazyCompile:*fib script.js:3",
                                         "[unknown]", "[unknown]"));
  EXPECT_EQ(frames[0].kind, ProfileFrameKind::kJit);
  EXPECT_EQ(symbolizer->Stats().named, 2u);

  // JIT code double-mapped from a memfd (no ELF image behind it) is named from the map too.
  sampler::ModuleInfo memfd;
  memfd.path = "/memfd:doublemapper (deleted)";
  const sampler::ModuleId id = registry.Intern(memfd);
  frames.clear();
  symbolizer->SymbolizeUser(4242, id, 0x1080, 0x7f0000001080, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("jit_compiled_add"));
  EXPECT_EQ(symbolizer->Stats().named, 3u);
  EXPECT_EQ(symbolizer->Stats().addresses, 5u);
}

// Inside execve the address is the old image's: a perf map of the pid (its JIT's) is not asked,
// and the miss is its own, with nothing to fix, out of the addresses that could be named.
TEST(SymbolizerSourcesTest, UnmappedFramesInsideExecveAreNotLookedUpNorCounted) {
  std::string dir = MakeTempDir();
  std::ofstream(dir + "/perf-4242.map") << "7f0000001000 100 jit_compiled_add\n";
  sampler::ModuleRegistry registry;
  SymbolizerOptions options;
  options.perf_map_dir = dir;
  auto symbolizer = MakeSymbolizer(registry, options);
  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUnmapped(4242, 0x7f0000001080, UnmappedContext::kInsideExecve, &frames);
  symbolizer->SymbolizeUnmapped(4242, 0x7f0000009000, UnmappedContext::kInsideExecve, &frames);
  symbolizer->SymbolizeUnmapped(4242, 0x7f0000009000, UnmappedContext::kNone, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("[unknown]", "[unknown]", "[unknown]"));
  const SymbolizationStats stats = symbolizer->Stats();
  EXPECT_EQ(stats.addresses, 1u);
  EXPECT_EQ(stats.named, 0u);
  ASSERT_THAT(stats.worst_modules, SizeIs(2));
  EXPECT_EQ(stats.worst_modules[0].unnamed, 2u);
  EXPECT_FALSE(stats.worst_modules[0].fixable);
  EXPECT_THAT(stats.worst_modules[0].reason, HasSubstr("inside execve"));
  EXPECT_EQ(stats.worst_modules[0].advice, "nothing to fix");
  EXPECT_TRUE(stats.worst_modules[1].fixable);
  EXPECT_THAT(stats.worst_modules[1].advice, HasSubstr("perf-PID.map"));
}

TEST(SymbolizerSourcesTest, VdsoFramesNamed) {
  uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) GTEST_SKIP() << "no vdso";
  void* fn = dlsym(RTLD_DEFAULT, "clock_gettime");
  ASSERT_NE(fn, nullptr);
  // Find __vdso_clock_gettime in our own vdso image through the symbolizer's own loader.
  sampler::ModuleRegistry registry;
  sampler::ModuleInfo info;
  info.path = "[vdso]";
  sampler::ModuleId id = registry.Intern(info);
  auto symbolizer = MakeSymbolizer(registry, SymbolizerOptions());
  symbolizer->NoteVdso(getpid(), base, base + 2 * 4096);
  bool named = false;
  for (uint64_t off = 0; off < 8192 && !named; off += 16) {
    std::vector<SymbolizedFrame> frames;
    symbolizer->SymbolizeUser(getpid(), id, off, base + off, &frames);
    ASSERT_THAT(frames, SizeIs(1));
    named = absl::StrContains(frames[0].function, "clock_gettime");
  }
  EXPECT_TRUE(named);
  // Offset 0 is the ELF header, in no function: the image was read, so the report must not say
  // it was not (it did, and told CLI users to call a library function).
  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUser(getpid(), id, 0, base, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("[vdso]"));
  const SymbolizationStats stats = symbolizer->Stats();
  ASSERT_THAT(stats.worst_modules, SizeIs(1));
  EXPECT_THAT(stats.worst_modules[0].reason, HasSubstr("without a symbol"));
  EXPECT_THAT(stats.worst_modules[0].advice, HasSubstr("debug symbols"));
}

TEST(SymbolizerSourcesTest, BinaryDeletedWhileRunningStillNamed) {
  std::string dir = MakeTempDir();
  std::string copy = dir + "/sym_prog_deleted";
  testing::WaitingSymProg prog(copy);
  ASSERT_GT(prog.pid(), 0);
  const pid_t pid = prog.pid();
  auto locations = testing::ParseLocations(prog.output());
  ASSERT_EQ(locations.count("main"), 1u) << prog.output();
  Location loc = locations["sym_c_function"];

  // What the recorder does at MMAP2 time: note the executable mapping.
  sampler::ModuleRegistry registry;
  sampler::ModuleInfo info;
  info.path = copy;
  info.first_pid = pid;
  sampler::ModuleId id = registry.Intern(info);
  auto symbolizer = MakeSymbolizer(registry, OnlyNames());
  prog.NoteMappings(*symbolizer, id);
  // Replace the binary with something else, then let the target exit.
  std::filesystem::remove(copy);
  std::filesystem::copy_file(TargetPath("sym_prog_O0"), copy);
  prog.Finish();

  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUser(pid, id, loc.file_offset, loc.avma, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("sym_c_function"));

  // Without the held fd the replacement is detected by its inode instead of misnamed.
  sampler::ModuleRegistry registry2;
  sampler::ModuleInfo stale = info;
  stale.inode = 1;  // not the inode of the file now at that path
  sampler::ModuleId id2 = registry2.Intern(stale);
  auto late = MakeSymbolizer(registry2, OnlyNames());
  frames.clear();
  late->SymbolizeUser(pid, id2, loc.file_offset, loc.avma, &frames);
  EXPECT_THAT(Names(frames), ElementsAre("[sym_prog_deleted]"));
  ASSERT_THAT(late->Stats().warnings, SizeIs(1));
  EXPECT_THAT(late->Stats().warnings[0], HasSubstr("changed on disk"));
}

}  // namespace
}  // namespace nativeprof::symbolize
