#include "output/flame_tree.h"

#include <algorithm>
#include <numeric>

#include "output/folded_writer.h"

namespace nativeprof::output {

using symbolize::Profile;
using symbolize::ProfileFrameKind;
using symbolize::ProfileStack;

Palette PaletteOf(ProfileFrameKind kind) {
  switch (kind) {
    case ProfileFrameKind::kKernel:
      return Palette::kKernel;
    case ProfileFrameKind::kInlined:
      return Palette::kInlined;
    case ProfileFrameKind::kJit:
      return Palette::kJit;
    case ProfileFrameKind::kUser:
      break;
  }
  return Palette::kUser;
}

FlameTree::FlameTree() {
  FlameNode root;
  root.name = InternName("all", Palette::kRoot);
  nodes_.push_back(root);
}

uint32_t FlameTree::InternName(absl::string_view name, Palette palette) {
  auto [it, inserted] = name_ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) {
    names_.emplace_back(name);
    palettes_.push_back(palette);
  }
  return it->second;
}

void FlameTree::AddPath(const std::vector<uint32_t>& path, uint64_t count, int series,
                        bool off_cpu) {
  if (count == 0) return;
  paths_.push_back({static_cast<uint32_t>(path_names_.size()),
                    static_cast<uint32_t>(path.size()), count, series, off_cpu});
  path_names_.insert(path_names_.end(), path.begin(), path.end());
}

void FlameTree::AddProfile(const Profile& profile, int series) {
  std::vector<uint32_t> frame_names(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    frame_names[i] =
        InternName(FoldedFrameName(profile.frames[i]), PaletteOf(profile.frames[i].kind));
  }
  const uint32_t unknown = InternName("[unknown]", Palette::kUser);
  std::vector<uint32_t> path;
  for (const ProfileStack& s : profile.stacks) {
    if (s.samples == 0) continue;
    path.clear();
    path.push_back(InternName(SanitizeFoldedName(s.thread_name), Palette::kThread));
    for (uint32_t f : s.frames) path.push_back(f < frame_names.size() ? frame_names[f] : unknown);
    AddPath(path, s.samples, series, s.off_cpu);
  }
}

void FlameTree::Finish() {
  // Rank names bytewise once, then sort paths by rank sequence: identical paths become adjacent
  // and children come out in name order.
  std::vector<uint32_t> by_name(names_.size());
  std::iota(by_name.begin(), by_name.end(), 0);
  std::sort(by_name.begin(), by_name.end(),
            [this](uint32_t a, uint32_t b) { return names_[a] < names_[b]; });
  std::vector<uint32_t> rank(names_.size());
  for (uint32_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = r;
  const uint32_t* names = path_names_.data();
  std::stable_sort(paths_.begin(), paths_.end(), [&](const PendingPath& a, const PendingPath& b) {
    const uint32_t n = std::min(a.length, b.length);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t ra = rank[names[a.offset + i]], rb = rank[names[b.offset + i]];
      if (ra != rb) return ra < rb;
    }
    return a.length < b.length;
  });

  // open[d] = node at depth d on the previous path (open[0] = root).
  std::vector<uint32_t> open = {0};
  for (const PendingPath& p : paths_) {
    uint32_t common = 0;
    while (common < p.length && common + 1 < open.size() &&
           nodes_[open[common + 1]].name == names[p.offset + common]) {
      ++common;
    }
    // Paths are sorted, so the previous path's node just below the common prefix is the most
    // recent (last) child of open[common]; if the previous path ended there, it has no children.
    const uint32_t prev_child = common + 1 < open.size() ? open[common + 1] : 0;
    open.resize(common + 1);
    for (uint32_t d = common; d < p.length; ++d) {
      const uint32_t id = static_cast<uint32_t>(nodes_.size());
      FlameNode node;
      node.name = names[p.offset + d];
      node.depth = d + 1;
      nodes_.push_back(node);
      if (d == common && prev_child != 0) {
        nodes_[prev_child].next_sibling = id;
      } else {
        nodes_[open[d]].first_child = id;
      }
      open.push_back(id);
    }
    for (uint32_t d = 0; d <= p.length; ++d) nodes_[open[d]].value[p.series] += p.count;
    if (p.off_cpu && p.series == 0) {
      for (uint32_t d = 0; d <= p.length; ++d) nodes_[open[d]].off_cpu += p.count;
    }
    nodes_[open[p.length]].self[p.series] += p.count;
  }
  paths_.clear();
  paths_.shrink_to_fit();
  path_names_.clear();
  path_names_.shrink_to_fit();
}

std::vector<uint32_t> FlameTree::Children(uint32_t id) const {
  std::vector<uint32_t> out;
  for (uint32_t c = nodes_[id].first_child; c != 0; c = nodes_[c].next_sibling) out.push_back(c);
  return out;
}

FlameTree BuildFlameGraphTree(const Profile& profile) {
  FlameTree tree;
  tree.AddProfile(profile, 0);
  tree.Finish();
  return tree;
}

}  // namespace nativeprof::output
