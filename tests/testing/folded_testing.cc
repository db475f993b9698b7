#include "tests/testing/folded_testing.h"

#include <algorithm>
#include <sstream>

namespace nativeprof::testing {

FoldedProfile FoldedProfile::Parse(const std::string& text) {
  FoldedProfile p;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    size_t space = line.rfind(' ');
    if (space == std::string::npos) {
      p.errors_.push_back("line " + std::to_string(number) + ": no count");
      continue;
    }
    FoldedLine fl;
    try {
      fl.count = std::stoull(line.substr(space + 1));
    } catch (...) {
      p.errors_.push_back("line " + std::to_string(number) + ": bad count");
      continue;
    }
    std::string stack = line.substr(0, space);
    size_t start = 0;
    while (true) {
      size_t semi = stack.find(';', start);
      fl.frames.push_back(stack.substr(start, semi - start));
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    p.total_ += fl.count;
    p.lines_.push_back(std::move(fl));
  }
  return p;
}

uint64_t FoldedProfile::Self(const std::string& function) const {
  uint64_t n = 0;
  for (const FoldedLine& l : lines_) {
    if (l.frames.size() > 1 && l.frames.back() == function) n += l.count;
  }
  return n;
}

uint64_t FoldedProfile::Total(const std::string& function) const {
  uint64_t n = 0;
  for (const FoldedLine& l : lines_) {
    if (std::find(l.frames.begin() + 1, l.frames.end(), function) != l.frames.end()) n += l.count;
  }
  return n;
}

uint64_t FoldedProfile::ForThread(const std::string& comm) const {
  uint64_t n = 0;
  for (const FoldedLine& l : lines_) {
    if (!l.frames.empty() && l.frames[0] == comm) n += l.count;
  }
  return n;
}

uint64_t FoldedProfile::WithSequence(const std::vector<std::string>& seq) const {
  uint64_t n = 0;
  for (const FoldedLine& l : lines_) {
    if (std::search(l.frames.begin(), l.frames.end(), seq.begin(), seq.end()) != l.frames.end()) {
      n += l.count;
    }
  }
  return n;
}

}  // namespace nativeprof::testing
