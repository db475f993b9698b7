#include "output/flame_tree.h"

#include <algorithm>

#include "absl/status/status.h"
#include "output/folded_writer.h"

namespace nativeprof::output {

using symbolize::FrameKind;
using symbolize::Profile;
using symbolize::ProfileStack;

Palette PaletteOf(FrameKind kind) {
  switch (kind) {
    case FrameKind::kKernel:
      return Palette::kKernel;
    case FrameKind::kInlined:
      return Palette::kInlined;
    case FrameKind::kJit:
      return Palette::kJit;
    case FrameKind::kUser:
      break;
  }
  return Palette::kUser;
}

FlameTree::FlameTree(bool time_ordered) : time_ordered_(time_ordered) {
  FlameNode root;
  root.name = InternName("all", Palette::kRoot);
  nodes_.push_back(std::move(root));
}

uint32_t FlameTree::InternName(absl::string_view name, Palette palette) {
  auto [it, inserted] = name_ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) {
    names_.emplace_back(name);
    palettes_.push_back(palette);
  }
  return it->second;
}

uint32_t FlameTree::Child(uint32_t parent, uint32_t name) {
  if (time_ordered_) {
    const std::vector<uint32_t>& kids = nodes_[parent].children;
    if (!kids.empty() && nodes_[kids.back()].name == name) return kids.back();
  } else {
    auto it = child_index_.find((static_cast<uint64_t>(parent) << 32) | name);
    if (it != child_index_.end()) return it->second;
  }
  const uint32_t id = static_cast<uint32_t>(nodes_.size());
  FlameNode node;
  node.name = name;
  node.parent = parent;
  node.depth = nodes_[parent].depth + 1;
  nodes_.push_back(std::move(node));
  nodes_[parent].children.push_back(id);
  if (!time_ordered_) child_index_.emplace((static_cast<uint64_t>(parent) << 32) | name, id);
  return id;
}

void FlameTree::AddPath(const std::vector<uint32_t>& path, uint64_t count, int series) {
  if (count == 0) return;
  uint32_t cur = 0;
  nodes_[0].value[series] += count;
  for (uint32_t name : path) {
    cur = Child(cur, name);
    nodes_[cur].value[series] += count;
  }
  nodes_[cur].self[series] += count;
}

void FlameTree::AddProfile(const Profile& profile, int series) {
  std::vector<uint32_t> frame_names(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    frame_names[i] =
        InternName(FoldedFrameName(profile.frames[i]), PaletteOf(profile.frames[i].kind));
  }
  const uint32_t unknown = InternName("[unknown]", Palette::kUser);
  for (const ProfileStack& s : profile.stacks) {
    if (s.samples == 0) continue;
    scratch_.clear();
    scratch_.push_back(InternName(SanitizeFoldedName(s.thread_name), Palette::kThread));
    for (uint32_t f : s.frames) scratch_.push_back(f < frame_names.size() ? frame_names[f] : unknown);
    AddPath(scratch_, s.samples, series);
  }
}

void FlameTree::Finish() {
  if (time_ordered_) return;
  child_index_.clear();
  for (FlameNode& n : nodes_) {
    std::sort(n.children.begin(), n.children.end(), [this](uint32_t a, uint32_t b) {
      return names_[nodes_[a].name] < names_[nodes_[b].name];
    });
  }
}

FlameTree BuildFlameGraphTree(const Profile& profile) {
  FlameTree tree(false);
  tree.AddProfile(profile, 0);
  tree.Finish();
  return tree;
}

absl::StatusOr<FlameTree> BuildFlameChartTree(const Profile& profile) {
  if (profile.timeline.empty()) {
    return absl::InvalidArgumentError(
        "--flamechart needs samples in time order, and this profile has none (folded files "
        "keep no timeline); record with -o FILE.svg --flamechart instead");
  }
  FlameTree tree(true);
  std::vector<uint32_t> frame_names(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    frame_names[i] = tree.InternName(FoldedFrameName(profile.frames[i]),
                                     PaletteOf(profile.frames[i].kind));
  }
  const uint32_t unknown = tree.InternName("[unknown]", Palette::kUser);
  std::vector<uint32_t> path;
  for (const symbolize::TimedSample& ts : profile.timeline) {
    if (ts.stack >= profile.stacks.size()) continue;
    const ProfileStack& s = profile.stacks[ts.stack];
    path.clear();
    path.push_back(tree.InternName(SanitizeFoldedName(s.thread_name), Palette::kThread));
    for (uint32_t f : s.frames) path.push_back(f < frame_names.size() ? frame_names[f] : unknown);
    tree.AddPath(path, 1, 0);
  }
  tree.Finish();
  return tree;
}

}  // namespace nativeprof::output
