// ModulePrefetcher: modules loaded on its thread are handed over once, keyed as the symbolizer
// keys them; a file that is not the mapped one is reported, not loaded; the names of queued
// frames are prepared; nothing is loaded after Stop(). And a symbolizer that prefetches names a running program's functions as one that does
// not, even when the binary is replaced on disk before the names are asked for.
#include "symbolize/module_prefetcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolize/symbolizer.h"
#include "tests/testing/test_support.h"
#include "tests/unit/symbolize/sym_test_util.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::TargetPath;
using ::testing::ElementsAre;

sampler::ModuleInfo InfoOf(const std::string& path) {
  sampler::ModuleInfo info;
  info.path = path;
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  info.dev = st.st_dev;
  info.inode = st.st_ino;
  return info;
}

ScopedFd OpenFd(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << path;
  return fd;
}

ModuleLoadOptions NamesOnly() {
  ModuleLoadOptions options;
  options.debug_dirs = {};
  options.dwarf = false;
  return options;
}

TEST(ModulePrefetcherTest, LoadedModuleIsHandedOverOnce) {
  const std::string path = TargetPath("sym_prog");
  ModulePrefetcher prefetcher(NamesOnly());
  prefetcher.Add(3, InfoOf(path), OpenFd(path));
  prefetcher.WaitUntilIdle();
  prefetcher.Stop();

  std::optional<LoadedModule> loaded = prefetcher.Take(3);
  ASSERT_TRUE(loaded.has_value());
  ASSERT_TRUE(loaded->status.ok()) << loaded->status;
  EXPECT_FALSE(loaded->key.empty());
  EXPECT_FALSE(prefetcher.Take(3).has_value());

  std::unique_ptr<ModuleSymbols> symbols = prefetcher.TakeSymbols(loaded->key);
  ASSERT_NE(symbols, nullptr);
  EXPECT_EQ(symbols->source(), NameSource::kSymtab);
  EXPECT_GT(symbols->table().size(), 0u);
  EXPECT_EQ(prefetcher.TakeSymbols(loaded->key), nullptr);
}

TEST(ModulePrefetcherTest, TwoModulesOfOneFileShareOneLoad) {
  const std::string path = TargetPath("sym_prog");
  ModulePrefetcher prefetcher(NamesOnly());
  prefetcher.Add(1, InfoOf(path), OpenFd(path));
  prefetcher.Add(2, InfoOf(path), OpenFd(path));
  prefetcher.WaitUntilIdle();
  prefetcher.Stop();
  std::optional<LoadedModule> a = prefetcher.Take(1), b = prefetcher.Take(2);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->key, b->key);
  EXPECT_NE(prefetcher.TakeSymbols(a->key), nullptr);
}

TEST(ModulePrefetcherTest, AnotherFileThanTheMappedOneIsReportedNotLoaded) {
  const std::string path = TargetPath("sym_prog");
  sampler::ModuleInfo info = InfoOf(path);
  info.inode += 1;  // the mapping was of another file than the one the fd reads
  ModulePrefetcher prefetcher(NamesOnly());
  prefetcher.Add(5, info, OpenFd(path));
  prefetcher.WaitUntilIdle();
  prefetcher.Stop();
  std::optional<LoadedModule> loaded = prefetcher.Take(5);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(absl::IsFailedPrecondition(loaded->status)) << loaded->status;
}

// The names of a queued frame are prepared on the thread: its DWARF unit is indexed before the
// symbolizer asks; a frame of a module never added, and a kernel frame, are passed over.
size_t UnitsIndexedAfterPreparing(bool prepare) {
  const std::string path = TargetPath("sym_prog");
  const testing::Location loc = testing::RunAndLocate(path)["sym_c_function"];
  EXPECT_GT(loc.file_offset, 0u);
  ModuleLoadOptions options;
  options.debug_dirs = {};
  ModulePrefetcher prefetcher(options);
  prefetcher.Add(3, InfoOf(path), OpenFd(path));
  if (prepare) {
    const unwind::CollectedFrame frames[] = {unwind::CollectedFrame::InModule(3, loc.file_offset),
                                             unwind::CollectedFrame::InModule(4, loc.file_offset),
                                             unwind::CollectedFrame::Kernel(0xffffffff81000000)};
    prefetcher.PrepareNames(frames);
  }
  prefetcher.WaitUntilIdle();
  prefetcher.Stop();
  std::optional<LoadedModule> loaded = prefetcher.Take(3);
  EXPECT_TRUE(loaded.has_value() && loaded->status.ok());
  if (!loaded.has_value()) return 0;
  std::unique_ptr<ModuleSymbols> symbols = prefetcher.TakeSymbols(loaded->key);
  EXPECT_NE(symbols, nullptr);
  if (symbols == nullptr || symbols->dwarf() == nullptr) {
    ADD_FAILURE() << path << " has no DWARF";
    return 0;
  }
  return symbols->dwarf()->indexed_units();
}

TEST(ModulePrefetcherTest, PreparesTheNamesOfQueuedFrames) {
  EXPECT_EQ(UnitsIndexedAfterPreparing(/*prepare=*/false), 0u);
  EXPECT_EQ(UnitsIndexedAfterPreparing(/*prepare=*/true), 1u);
}

TEST(ModulePrefetcherTest, NothingIsLoadedAfterStop) {
  const std::string path = TargetPath("sym_prog");
  ModulePrefetcher prefetcher(NamesOnly());
  prefetcher.Stop();
  prefetcher.Add(1, InfoOf(path), OpenFd(path));
  const unwind::CollectedFrame frame = unwind::CollectedFrame::InModule(1, 0);
  prefetcher.PrepareNames({&frame, 1});
  prefetcher.Stop();
  EXPECT_FALSE(prefetcher.Take(1).has_value());
}

// What `record` does: the mapping is noted while the program runs, the binary is replaced on
// disk, and the names are asked for after it exited.
std::vector<std::string> NameAfterReplacement(bool prefetch) {
  const std::string copy = MakeTempDir() + "/sym_prog_prefetched";
  testing::WaitingSymProg prog(copy);
  auto locations = testing::ParseLocations(prog.output());
  EXPECT_EQ(locations.count("sym_c_function"), 1u) << prog.output();
  const testing::Location loc = locations["sym_c_function"];

  sampler::ModuleRegistry registry;
  sampler::ModuleInfo info;
  info.path = copy;
  info.first_pid = prog.pid();
  const sampler::ModuleId id = registry.Intern(info);
  SymbolizerOptions options;
  options.inline_frames = false;
  options.debug_dirs = {};
  options.prefetch = prefetch;
  auto symbolizer = MakeSymbolizer(registry, options);
  prog.NoteMappings(*symbolizer, id);
  // Time for the prefetcher to load it (a millisecond's work), as it would while a target runs;
  // had it not, the symbolizer loads it itself, from the same held file.
  if (prefetch) ::usleep(100'000);
  std::filesystem::remove(copy);
  std::filesystem::copy_file(TargetPath("sym_prog_O0"), copy);
  prog.Finish();

  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUser(prog.pid(), id, loc.file_offset, loc.avma, &frames);
  EXPECT_TRUE(symbolizer->Stats().warnings.empty());
  return testing::Names(frames);
}

TEST(ModulePrefetcherTest, SymbolizerNamesAsWithoutPrefetch) {
  EXPECT_THAT(NameAfterReplacement(/*prefetch=*/true), ElementsAre("sym_c_function"));
  EXPECT_THAT(NameAfterReplacement(/*prefetch=*/false), ElementsAre("sym_c_function"));
}

}  // namespace
}  // namespace nativeprof::symbolize
