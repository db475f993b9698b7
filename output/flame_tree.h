// The call tree behind flame graphs, flame charts, `report --tree` and differential flame graphs:
// stacks merged by path (thread name first, then frames root-first), or - for flame charts -
// merged only with the previous sample, so the x axis keeps time order. Nodes can carry two
// series (BEFORE and AFTER, for diff). Built and read on one thread.
#ifndef NATIVEPROF_OUTPUT_FLAME_TREE_H_
#define NATIVEPROF_OUTPUT_FLAME_TREE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// Which colour family a name gets in the SVG.
enum class Palette : uint8_t { kUser, kKernel, kInlined, kJit, kThread, kRoot };

struct FlameNode {
  uint32_t name = 0;               // index into FlameTree::names()
  uint32_t parent = 0;             // the root is its own parent
  uint32_t depth = 0;              // root 0, thread names 1, outermost frames 2
  uint64_t value[2] = {0, 0};      // samples under this node, per series
  uint64_t self[2] = {0, 0};       // samples ending here, per series
  std::vector<uint32_t> children;  // in layout order after Finish()
};

class FlameTree {
 public:
  // `time_ordered`: merge a stack only into the most recent child (flame chart) instead of any
  // child with the same name.
  explicit FlameTree(bool time_ordered = false);

  // Interns a display name with its palette; the first palette given for a name wins.
  uint32_t InternName(absl::string_view name, Palette palette);

  // Adds `count` samples along `path` (name ids, root-first, the thread name first) to `series`.
  void AddPath(const std::vector<uint32_t>& path, uint64_t count, int series = 0);

  // Adds every stack of `profile` (sample counts) to `series`.
  void AddProfile(const symbolize::Profile& profile, int series = 0);

  // Sorts children by name (merged trees; flame charts keep insertion order). Call once after the
  // last Add*.
  void Finish();

  const std::vector<FlameNode>& nodes() const { return nodes_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<Palette>& palettes() const { return palettes_; }
  const FlameNode& root() const { return nodes_[0]; }

 private:
  uint32_t Child(uint32_t parent, uint32_t name);

  bool time_ordered_;
  std::vector<FlameNode> nodes_;
  std::vector<std::string> names_;
  std::vector<Palette> palettes_;
  absl::flat_hash_map<std::string, uint32_t> name_ids_;
  absl::flat_hash_map<uint64_t, uint32_t> child_index_;  // (parent << 32 | name) -> node
  std::vector<uint32_t> scratch_;
};

// Builds the merged tree of a profile (series 0), finished.
FlameTree BuildFlameGraphTree(const symbolize::Profile& profile);

// Builds a flame chart tree from Profile::timeline (samples in time order), finished.
// Errors: kInvalidArgument when the profile has no timeline (e.g. it was read from a folded file).
absl::StatusOr<FlameTree> BuildFlameChartTree(const symbolize::Profile& profile);

// Palette of a profile frame.
Palette PaletteOf(symbolize::FrameKind kind);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_FLAME_TREE_H_
