// A binary replaced on disk after it was mapped (rebuilt during a run) is refused by the unwinder
// (no CFI) and by the symbolizer (no names) alike: both open it through module/'s one opener and
// identity check, so a stack is never unwound with one file and named with another.
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/address_space.h"
#include "sampler/module_registry.h"
#include "symbolize/symbolizer.h"
#include "tests/testing/test_support.h"
#include "tests/unit/symbolize/sym_test_util.h"
#include "unwind/module_files.h"

namespace nativeprof::symbolize {
namespace {

using ::nativeprof::testing::MakeTempDir;
using ::nativeprof::testing::TargetPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

struct Outcome {
  bool has_cfi = false;
  std::vector<std::string> names;
  std::vector<std::string> warnings;
};

// What the unwinder and the symbolizer make of `info`'s module at `loc`, each fresh.
Outcome UnwindAndName(const sampler::ModuleInfo& info, const testing::Location& loc) {
  sampler::ModuleRegistry registry;
  const sampler::ModuleId id = registry.Intern(info);
  sampler::Mapping mapping;
  mapping.start_avma = 0x400000;
  mapping.end_avma = 0x500000;
  mapping.module = id;
  unwind::ModuleFiles files;
  unwind::ProcessView process{.pid = 0, .address_space = nullptr, .modules = &registry};
  Outcome out;
  out.has_cfi = files.Get(mapping, process) != nullptr;
  SymbolizerOptions options;
  options.inline_frames = false;
  options.debug_dirs = {};
  auto symbolizer = MakeSymbolizer(registry, options);
  std::vector<SymbolizedFrame> frames;
  symbolizer->SymbolizeUser(0, id, loc.file_offset, loc.avma, &frames);
  out.names = testing::Names(frames);
  out.warnings = symbolizer->Stats().warnings;
  return out;
}

TEST(ReplacedModuleTest, RefusedForCfiAndNamesAlike) {
  auto locations = testing::RunAndLocate(TargetPath("sym_prog"));
  ASSERT_EQ(locations.count("sym_c_function"), 1u);
  const testing::Location loc = locations["sym_c_function"];
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/prog";
  std::filesystem::copy_file(TargetPath("sym_prog"), path);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  sampler::ModuleInfo info;  // as an MMAP2 record without a build-id describes it
  info.path = path;
  info.dev = st.st_dev;
  info.inode = st.st_ino;

  Outcome before = UnwindAndName(info, loc);
  EXPECT_TRUE(before.has_cfi);
  EXPECT_THAT(before.names, ElementsAre("sym_c_function"));

  // Rebuilt during the run: another file at the path (the old inode stays allocated aside).
  std::filesystem::rename(path, path + ".old");
  std::filesystem::copy_file(TargetPath("sym_prog_O0"), path);
  Outcome after = UnwindAndName(info, loc);
  EXPECT_FALSE(after.has_cfi);
  EXPECT_THAT(after.names, ElementsAre("[prog]"));
  ASSERT_THAT(after.warnings, SizeIs(1));
  EXPECT_THAT(after.warnings[0], HasSubstr("changed on disk"));
  EXPECT_THAT(after.warnings[0], Not(HasSubstr("cannot read")));
}

}  // namespace
}  // namespace nativeprof::symbolize
