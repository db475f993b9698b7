#include "output/folded_writer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace nativeprof::output {

using symbolize::Profile;
using symbolize::ProfileFrame;
using symbolize::ProfileStack;

std::string SanitizeFoldedName(absl::string_view name) {
  if (name.empty()) return "[unknown]";
  std::string out(name);
  for (char& c : out) {
    if (c == ';') {
      c = ':';
    } else if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return out;
}

std::string FoldedFrameName(const ProfileFrame& frame) {
  return absl::StrCat(SanitizeFoldedName(frame.function), symbolize::FrameKindSuffix(frame.kind));
}

std::string RenderFolded(const Profile& profile) {
  // Frame names are computed once: a profile has far fewer frames than frame references.
  std::vector<std::string> names;
  names.reserve(profile.frames.size());
  for (const ProfileFrame& f : profile.frames) names.push_back(FoldedFrameName(f));

  absl::flat_hash_map<std::string, uint64_t> counts;
  counts.reserve(profile.stacks.size());
  std::string key;
  for (const ProfileStack& s : profile.stacks) {
    if (s.samples == 0) continue;
    key = SanitizeFoldedName(s.thread_name);
    for (uint32_t idx : s.frames) {
      key.push_back(';');
      key.append(idx < names.size() ? names[idx] : std::string("[unknown]"));
    }
    counts[key] += s.samples;
  }

  std::vector<std::pair<std::string, uint64_t>> lines(counts.begin(), counts.end());
  std::sort(lines.begin(), lines.end());
  size_t total = 0;
  for (const auto& [k, v] : lines) total += k.size() + 22;
  std::string out;
  out.reserve(total);
  for (const auto& [k, v] : lines) absl::StrAppend(&out, k, " ", v, "\n");
  return out;
}

}  // namespace nativeprof::output
