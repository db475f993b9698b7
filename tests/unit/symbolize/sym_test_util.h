// Shared by the symbolizer tests: runs a sym_* test program and parses the locations it prints
// ("name<TAB>path<TAB>file offset<TAB>address"), and builds a registry with one module per path.
#ifndef NATIVEPROF_TESTS_UNIT_SYMBOLIZE_SYM_TEST_UTIL_H_
#define NATIVEPROF_TESTS_UNIT_SYMBOLIZE_SYM_TEST_UTIL_H_

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
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

// A copy of sym_prog at `path`, run in its `wait` mode: it prints where its functions are, then
// waits for its stdin to close. What `record` has of a running target: a pid and its mappings.
class WaitingSymProg {
 public:
  explicit WaitingSymProg(const std::string& path) : path_(path) {
    std::filesystem::copy_file(nativeprof::testing::TargetPath("sym_prog"), path_);
    int to_child[2], from_child[2];
    EXPECT_EQ(pipe(to_child), 0);
    EXPECT_EQ(pipe(from_child), 0);
    pid_ = fork();
    EXPECT_GE(pid_, 0);
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      execl(path_.c_str(), path_.c_str(), "wait", nullptr);
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    stdin_ = to_child[1];
    stdout_ = from_child[0];
    // The locations end with main's line; the program then waits.
    auto complete = [this] {
      const size_t main_line = out_.find("main\t");
      return main_line != std::string::npos && out_.find('\n', main_line) != std::string::npos;
    };
    char buf[4096];
    ssize_t n;
    while (!complete() && (n = read(stdout_, buf, sizeof(buf))) > 0) {
      out_.append(buf, static_cast<size_t>(n));
    }
  }
  ~WaitingSymProg() { Finish(); }
  WaitingSymProg(const WaitingSymProg&) = delete;
  WaitingSymProg& operator=(const WaitingSymProg&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& output() const { return out_; }

  // Notes each mapping of the copy in /proc/PID/maps, as the recorder does at MMAP2 time.
  void NoteMappings(Symbolizer& symbolizer, sampler::ModuleId id) const {
    const std::string maps =
        nativeprof::testing::ReadFileOrEmpty(absl::StrCat("/proc/", pid_, "/maps"));
    for (absl::string_view line : absl::StrSplit(maps, '\n')) {
      if (!absl::StrContains(line, path_)) continue;
      uint64_t start = 0, end = 0;
      std::vector<std::string> range = absl::StrSplit(line.substr(0, line.find(' ')), '-');
      EXPECT_TRUE(absl::SimpleHexAtoi(range[0], &start) && absl::SimpleHexAtoi(range[1], &end));
      symbolizer.NoteMapping(pid_, id, start, end);
    }
  }

  // Closes its stdin, so it exits, and reaps it. Idempotent.
  void Finish() {
    if (stdin_ < 0) return;
    close(stdin_);
    stdin_ = -1;
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    close(stdout_);
  }

 private:
  std::string path_;
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  std::string out_;
};

inline std::vector<std::string> Names(const std::vector<SymbolizedFrame>& frames) {
  std::vector<std::string> names;
  for (const SymbolizedFrame& f : frames) names.push_back(f.function);
  return names;
}

}  // namespace nativeprof::symbolize::testing

#endif  // NATIVEPROF_TESTS_UNIT_SYMBOLIZE_SYM_TEST_UTIL_H_
