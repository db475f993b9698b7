#include "output/folded_writer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace nativeprof::output {

using symbolize::Profile;
using symbolize::ProfileFrame;
using symbolize::ProfileStack;

std::string EscapeFoldedFrame(absl::string_view frame) {
  std::string out(frame.data(), frame.size());
  for (char& c : out) {
    if (c == ';') {
      c = ':';
    } else if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return out;
}

std::string SanitizeFoldedName(absl::string_view name) {
  std::string escaped = EscapeFoldedFrame(name);
  // Readers trim blanks before the count, so a blank name would vanish: a thread without frames
  // would leave a line with no stack, which no reader (ours included) accepts.
  if (escaped.find_first_not_of(" \t") == std::string::npos) return "[unknown]";
  return escaped;
}

std::string FoldedFrameName(const ProfileFrame& frame) {
  // With --lines the leaf frame carries its source position: "function (file:line)".
  std::string position;
  if (!frame.file.empty() && frame.line > 0) {
    position = absl::StrCat(" (", SanitizeFoldedName(frame.file), ":", frame.line, ")");
  }
  return absl::StrCat(SanitizeFoldedName(frame.function), position,
                      symbolize::ProfileFrameKindSuffix(frame.kind));
}

std::string RenderFolded(const Profile& profile) {
  // Frame names are computed once: a profile has far fewer frames than frame references.
  std::vector<std::string> names;
  names.reserve(profile.frames.size());
  for (const ProfileFrame& f : profile.frames) names.push_back(FoldedFrameName(f));

  // Lines live in `keys` (reserved up front, so the views in `index` stay valid); merging and
  // sorting then never copy the line text.
  std::vector<std::string> keys;
  keys.reserve(profile.stacks.size());
  std::vector<uint64_t> counts;
  counts.reserve(profile.stacks.size());
  absl::flat_hash_map<absl::string_view, size_t> index;
  index.reserve(profile.stacks.size());
  std::string key;
  for (const ProfileStack& s : profile.stacks) {
    if (s.samples == 0) continue;
    key = SanitizeFoldedName(s.thread_name);
    for (uint32_t idx : s.frames) {
      key.push_back(';');
      key.append(idx < names.size() ? names[idx] : std::string("[unknown]"));
    }
    auto it = index.find(key);
    if (it != index.end()) {
      counts[it->second] += s.samples;
      continue;
    }
    keys.push_back(std::move(key));
    counts.push_back(s.samples);
    index.emplace(keys.back(), keys.size() - 1);
  }

  std::vector<size_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  size_t total = 0;
  for (const std::string& k : keys) total += k.size() + 22;
  std::string out;
  out.reserve(total);
  for (size_t i : order) absl::StrAppend(&out, keys[i], " ", counts[i], "\n");
  return out;
}

}  // namespace nativeprof::output
