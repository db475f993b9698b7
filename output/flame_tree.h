// The merged call tree behind flame graphs, `report --tree` and differential flame graphs: stacks
// merged by path (thread name first, then frames root-first), children in name order, with two
// series per node (BEFORE and AFTER, for diff). Built like flamegraph.pl's flow: paths are sorted
// and each merged with the previous one's common prefix, so no per-node hash lookups. Built and
// read on one thread.
#ifndef NATIVEPROF_OUTPUT_FLAME_TREE_H_
#define NATIVEPROF_OUTPUT_FLAME_TREE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// Which colour family a name gets in the SVG.
enum class Palette : uint8_t { kUser, kKernel, kInlined, kJit, kThread, kRoot };

struct FlameNode {
  uint32_t name = 0;           // index into FlameTree::names()
  uint32_t depth = 0;          // root 0, thread names 1, outermost frames 2
  uint32_t first_child = 0;    // 0 = none (the root is never a child)
  uint32_t next_sibling = 0;   // 0 = none; siblings are in name order
  uint64_t value[2] = {0, 0};  // samples under this node, per series
  uint64_t self[2] = {0, 0};   // samples ending here, per series
  uint64_t off_cpu = 0;        // of value[0], what came from off-CPU stacks (wall profiles)
};

class FlameTree {
 public:
  FlameTree();

  // Interns a display name with its palette; the first palette given for a name wins.
  uint32_t InternName(absl::string_view name, Palette palette);

  // Queues `count` samples along `path` (name ids, root-first, the thread name first) for
  // `series` (0 or 1). Nodes exist only after Finish().
  // `off_cpu`: the samples are time off-CPU (a wall profile's switched-out stacks).
  void AddPath(const std::vector<uint32_t>& path, uint64_t count, int series = 0,
               bool off_cpu = false);

  // Queues every stack of `profile` (sample counts) for `series`.
  void AddProfile(const symbolize::Profile& profile, int series = 0);

  // Builds the nodes from the queued paths. Call once, after the last Add*.
  void Finish();

  const std::vector<FlameNode>& nodes() const { return nodes_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<Palette>& palettes() const { return palettes_; }
  const FlameNode& root() const { return nodes_[0]; }
  // Children of node `id`, in name order.
  std::vector<uint32_t> Children(uint32_t id) const;

 private:
  struct PendingPath {
    uint32_t offset;  // into path_names_
    uint32_t length;
    uint64_t count;
    int series;
    bool off_cpu;
  };

  std::vector<FlameNode> nodes_;
  std::vector<std::string> names_;
  std::vector<Palette> palettes_;
  absl::flat_hash_map<std::string, uint32_t> name_ids_;
  std::vector<uint32_t> path_names_;
  std::vector<PendingPath> paths_;
};

// Builds the merged tree of a profile (series 0), finished.
FlameTree BuildFlameGraphTree(const symbolize::Profile& profile);

// Palette of a profile frame.
Palette PaletteOf(symbolize::ProfileFrameKind kind);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_FLAME_TREE_H_
