// Reading folded profiles in tests: parse "comm;root;...;leaf COUNT" lines and measure the share
// of samples in which a function is the leaf (self) or anywhere on the stack (total).
#ifndef NATIVEPROF_TESTS_TESTING_FOLDED_TESTING_H_
#define NATIVEPROF_TESTS_TESTING_FOLDED_TESTING_H_

#include <cstdint>
#include <string>
#include <vector>

namespace nativeprof::testing {

struct FoldedLine {
  std::vector<std::string> frames;  // frames[0] is the thread name (comm), then root ... leaf
  uint64_t count = 0;
};

class FoldedProfile {
 public:
  // Parses folded text; malformed lines are recorded in errors().
  static FoldedProfile Parse(const std::string& text);

  uint64_t total() const { return total_; }
  const std::vector<FoldedLine>& lines() const { return lines_; }
  const std::vector<std::string>& errors() const { return errors_; }

  // Samples whose leaf frame is `function` (exact match).
  uint64_t Self(const std::string& function) const;
  // Samples with `function` anywhere on the stack (counted once per sample).
  uint64_t Total(const std::string& function) const;
  // Samples of threads named `comm`.
  uint64_t ForThread(const std::string& comm) const;
  // Samples whose stack contains `sequence` as consecutive frames (root to leaf order).
  uint64_t WithSequence(const std::vector<std::string>& sequence) const;
  double SelfShare(const std::string& f) const { return Share(Self(f)); }
  double TotalShare(const std::string& f) const { return Share(Total(f)); }

 private:
  double Share(uint64_t n) const {
    return total_ == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(total_);
  }
  std::vector<FoldedLine> lines_;
  std::vector<std::string> errors_;
  uint64_t total_ = 0;
};

}  // namespace nativeprof::testing

#endif  // NATIVEPROF_TESTS_TESTING_FOLDED_TESTING_H_
