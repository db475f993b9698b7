// Shared by the symbolizer tests: runs a sym_* test program and parses the locations it prints
// ("name<TAB>path<TAB>file offset<TAB>address"), and builds a registry with one module per path.
#ifndef NATIVEPROF_TESTS_UNIT_SYMBOLIZE_SYM_TEST_UTIL_H_
#define NATIVEPROF_TESTS_UNIT_SYMBOLIZE_SYM_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "sampler/module_registry.h"
#include "symbolize/symbolizer.h"
#include "tests/testing/test_support.h"

namespace nativeprof::symbolize::testing {

struct Location {
  std::string path;
  uint64_t file_offset = 0;
  uint64_t avma = 0;
};

inline std::map<std::string, Location> ParseLocations(const std::string& text) {
  std::map<std::string, Location> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() != 4) continue;
    Location loc;
    loc.path = f[1];
    if (!absl::SimpleHexAtoi(f[2], &loc.file_offset) || !absl::SimpleHexAtoi(f[3], &loc.avma)) {
      continue;
    }
    out[f[0]] = loc;
  }
  return out;
}

// Runs the program once and returns where its functions were.
inline std::map<std::string, Location> RunAndLocate(const std::string& program) {
  nativeprof::testing::CommandResult r = nativeprof::testing::RunCommand({program});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return ParseLocations(r.out);
}

// Symbolizes one address of `loc` through a fresh module entry and returns the frames.
inline std::vector<SymbolizedFrame> SymbolizeAt(Symbolizer& symbolizer,
                                                sampler::ModuleRegistry& registry,
                                                const Location& loc, int32_t pid = 0) {
  sampler::ModuleInfo info;
  info.path = loc.path;
  sampler::ModuleId id = registry.Intern(info);
  std::vector<SymbolizedFrame> frames;
  symbolizer.SymbolizeUser(pid, id, loc.file_offset, loc.avma, &frames);
  return frames;
}

inline std::vector<std::string> Names(const std::vector<SymbolizedFrame>& frames) {
  std::vector<std::string> names;
  for (const SymbolizedFrame& f : frames) names.push_back(f.function);
  return names;
}

}  // namespace nativeprof::symbolize::testing

#endif  // NATIVEPROF_TESTS_UNIT_SYMBOLIZE_SYM_TEST_UTIL_H_
