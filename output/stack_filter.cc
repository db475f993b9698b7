#include "output/stack_filter.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "output/folded_writer.h"

namespace nativeprof::output {
namespace {

// Evaluates `re` once per distinct frame: profiles have far fewer frames than frame references.
std::vector<bool> MatchFrames(const symbolize::Profile& profile, const NameRegex* re) {
  std::vector<bool> matched(profile.frames.size(), false);
  if (re == nullptr) return matched;
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    matched[i] = re->Matches(FoldedFrameName(profile.frames[i]));
  }
  return matched;
}

bool AnyMatch(const symbolize::ProfileStack& s, const std::vector<bool>& matched) {
  for (uint32_t f : s.frames) {
    if (f < matched.size() && matched[f]) return true;
  }
  return false;
}

}  // namespace

FilteredProfile FilterStacks(const symbolize::Profile& profile, const StackFilter& filter) {
  FilteredProfile out;
  symbolize::Profile& p = out.profile;
  p.frames = profile.frames;
  p.event = profile.event;
  p.weight_unit = profile.weight_unit;
  p.count_unit = profile.count_unit;
  p.sample_frequency_hz = profile.sample_frequency_hz;
  p.duration_ns = profile.duration_ns;
  p.sample_types = profile.sample_types;
  p.default_sample_type = profile.default_sample_type;
  p.period_type = profile.period_type;
  p.period = profile.period;

  const std::vector<bool> focus = MatchFrames(profile, filter.focus);
  const std::vector<bool> hide = MatchFrames(profile, filter.hide);
  using Key = std::tuple<std::string, int32_t, int32_t, std::vector<uint32_t>>;
  absl::flat_hash_map<Key, uint32_t> index;
  constexpr uint32_t kDropped = UINT32_MAX;
  std::vector<uint32_t> new_index(profile.stacks.size(), kDropped);
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const symbolize::ProfileStack& s = profile.stacks[i];
    out.all_samples += s.samples;
    if (filter.focus != nullptr && !AnyMatch(s, focus)) continue;
    out.samples += s.samples;
    symbolize::ProfileStack kept = s;
    if (filter.hide == nullptr) {
      // A Profile's stacks are unique already; only hiding frames can make two of them equal.
      new_index[i] = static_cast<uint32_t>(p.stacks.size());
      p.stacks.push_back(std::move(kept));
      continue;
    }
    kept.frames.clear();
    for (uint32_t f : s.frames) {
      if (f >= hide.size() || !hide[f]) kept.frames.push_back(f);
    }
    auto [it, inserted] = index.try_emplace(Key(kept.thread_name, kept.pid, kept.tid, kept.frames),
                                            static_cast<uint32_t>(p.stacks.size()));
    if (inserted) {
      p.stacks.push_back(std::move(kept));
    } else {
      symbolize::ProfileStack& into = p.stacks[it->second];
      into.samples += kept.samples;
      into.weight += kept.weight;
      into.values.resize(std::max(into.values.size(), kept.values.size()));
      for (size_t k = 0; k < kept.values.size(); ++k) into.values[k] += kept.values[k];
    }
    new_index[i] = it->second;
  }
  for (const symbolize::TimedSample& t : profile.timeline) {
    if (t.stack < new_index.size() && new_index[t.stack] != kDropped) {
      p.timeline.push_back({t.time_ns, new_index[t.stack]});
    }
  }
  return out;
}

}  // namespace nativeprof::output
