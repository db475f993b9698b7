#include "output/report_model.h"

#include <algorithm>

#include "output/folded_writer.h"
#include "output/module_key.h"

namespace nativeprof::output {
namespace {

RankedTable Rank(const FunctionTable& table, size_t top_n, const char* noun) {
  RankedTable ranked;
  ranked.noun = noun;
  ranked.samples = table.samples;
  ranked.by_self = TopRows(table, top_n, /*by_self=*/true);
  ranked.by_total = TopRows(table, top_n, /*by_self=*/false);
  return ranked;
}

}  // namespace

std::vector<FunctionCounts> TopRows(const FunctionTable& table, size_t top_n, bool by_self) {
  std::vector<FunctionCounts> rows;
  for (const FunctionCounts& f : table.functions) {
    if ((by_self ? f.self : f.total) > 0) rows.push_back(f);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [by_self](const FunctionCounts& a, const FunctionCounts& b) {
                     return (by_self ? a.self : a.total) > (by_self ? b.self : b.total);
                   });
  if (rows.size() > top_n) rows.resize(top_n);
  return rows;
}

std::vector<std::string> FrameModuleKeys(const symbolize::Profile& profile,
                                         const FrameModuleMap* frame_modules) {
  std::vector<std::string> keys;
  keys.reserve(profile.frames.size());
  for (const symbolize::ProfileFrame& f : profile.frames) {
    const std::string name = FoldedFrameName(f);
    std::string module;
    if (frame_modules != nullptr) {
      if (auto it = frame_modules->find(name); it != frame_modules->end()) module = it->second;
    }
    keys.push_back(ModuleKey(name, module));
  }
  return keys;
}

ReportModel BuildReport(const symbolize::Profile& profile, const ReportSpec& spec) {
  ReportModel model;
  model.filtered = FilterStacks(profile, {spec.focus, spec.hide});
  if (spec.focus != nullptr) model.focus = spec.focus->pattern();
  if (spec.hide != nullptr) model.hide = spec.hide->pattern();
  model.by = spec.by;
  model.top_n = spec.top_n;
  model.count_unit = spec.count_unit;
  const symbolize::Profile& p = model.filtered.profile;
  model.functions = Rank(CountFunctions(p), spec.top_n, "function");
  if (spec.by == ReportKey::kModule) {
    model.modules =
        Rank(CountGroups(p, FrameModuleKeys(p, spec.frame_modules)), spec.top_n, "module");
  }
  return model;
}

}  // namespace nativeprof::output
