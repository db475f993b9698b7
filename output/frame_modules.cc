#include "output/frame_modules.h"

#include <algorithm>
#include <map>
#include <vector>

#include "base/file_util.h"
#include "output/folded_writer.h"

namespace nativeprof::output {
nlohmann::json FrameModulesJson(const symbolize::Profile& profile) {
  const symbolize::Profile* one[] = {&profile};
  return FrameModulesJson(one);
}

nlohmann::json FrameModulesJson(std::span<const symbolize::Profile* const> profiles) {
  // name -> basename -> samples; std::map keeps every later step in a fixed order. A name
  // belongs to the first profile that has it: the views count in different units (samples,
  // bytes), and the first, the CPU view, names what `report --by module` groups.
  std::map<std::string, std::map<std::string, uint64_t>> seen;
  std::map<std::string, size_t> first_profile;
  for (size_t p = 0; p < profiles.size(); ++p) {
    const symbolize::Profile* profile = profiles[p];
    std::vector<uint64_t> frame_samples(profile->frames.size());
    for (const symbolize::ProfileStack& s : profile->stacks) {
      for (uint32_t f : s.frames) {
        if (f < frame_samples.size()) frame_samples[f] += s.samples;
      }
    }
    for (size_t i = 0; i < profile->frames.size(); ++i) {
      const symbolize::ProfileFrame& f = profile->frames[i];
      if (f.module.empty() || f.kind == symbolize::ProfileFrameKind::kKernel ||
          f.kind == symbolize::ProfileFrameKind::kJit) {
        continue;
      }
      std::string name = FoldedFrameName(f);
      if (first_profile.emplace(name, p).first->second != p) continue;
      seen[std::move(name)][std::string(BaseNameOf(f.module))] += frame_samples[i];
    }
  }
  struct Entry {
    const std::string* name;
    const std::string* module;
    size_t profile;  // the first profile with the name: its count is in that profile's unit
    uint64_t samples;
  };
  std::vector<Entry> entries;
  size_t omitted = 0;
  for (const auto& [name, modules] : seen) {
    if (name.size() > kMaxFrameModuleNameBytes) {
      ++omitted;
      continue;
    }
    const auto best = std::max_element(modules.begin(), modules.end(), [](auto& a, auto& b) {
      return a.second < b.second;  // first maximum: the smaller basename wins ties
    });
    uint64_t samples = 0;
    for (const auto& [module, n] : modules) samples += n;
    entries.push_back({&name, &best->first, first_profile[name], samples});
  }
  if (entries.size() > kMaxFrameModuleEntries) {
    // The first profile's frames first (counts of different units are not compared), then by
    // samples.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.profile != b.profile ? a.profile < b.profile : a.samples > b.samples;
    });
    omitted += entries.size() - kMaxFrameModuleEntries;
    entries.resize(kMaxFrameModuleEntries);
  }
  std::map<std::string, size_t> module_index;
  for (const Entry& e : entries) module_index.emplace(*e.module, 0);
  nlohmann::json modules = nlohmann::json::array();
  for (auto& [module, index] : module_index) {
    index = modules.size();
    modules.push_back(module);
  }
  nlohmann::json frames = nlohmann::json::object();
  for (const Entry& e : entries) frames[*e.name] = module_index[*e.module];
  return {{"modules", modules}, {"frames", frames}, {"omitted", omitted}};
}

FrameModuleMap ParseFrameModules(const nlohmann::json& metadata) {
  FrameModuleMap map;
  if (!metadata.is_object()) return map;
  const auto table = metadata.find("frame_modules");
  if (table == metadata.end() || !table->is_object()) return map;
  const auto modules = table->find("modules");
  const auto frames = table->find("frames");
  if (modules == table->end() || frames == table->end() || !modules->is_array() ||
      !frames->is_object()) {
    return map;
  }
  for (auto it = frames->begin(); it != frames->end(); ++it) {
    if (!it.value().is_number_unsigned()) continue;
    const uint64_t index = it.value().get<uint64_t>();
    if (index >= modules->size() || !(*modules)[index].is_string()) continue;
    map.emplace(it.key(), (*modules)[index].get<std::string>());
  }
  return map;
}

}  // namespace nativeprof::output
