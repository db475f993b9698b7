#include "tools/input_profile.h"

#include <cstdio>

#include "base/file_util.h"
#include "output/folded_reader.h"
#include "symbolize/profile_builder.h"
#include "tools/alloc_report.h"
#include "tools/cli_error.h"
#include "tools/record_options.h"

namespace nativeprof::tools {

std::optional<symbolize::Profile> ReadInputProfile(const std::string& path, absl::string_view fix) {
  absl::StatusOr<symbolize::Profile> profile = output::ReadFoldedFile(path);
  if (!profile.ok()) {
    PrintCliError(CliStep::kReadInput, profile.status(), {}, fix);
    return std::nullopt;
  }
  return *std::move(profile);
}

namespace {

nlohmann::json ParseMetadata(const std::string& text, const std::string& path) {
  nlohmann::json meta = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded()) {
    std::fprintf(stderr, "nativeprof: %s.json is not valid JSON; counters not shown\n",
                 path.c_str());
    return nullptr;
  }
  return meta;
}

nlohmann::json ReadMetadata(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path + ".json");
  if (!text.ok()) return nullptr;
  return ParseMetadata(*text, path);
}

}  // namespace

nlohmann::json ReadRecordMetadata(const std::string& path, std::string* view) {
  nlohmann::json own = ReadMetadata(path);
  if (!own.is_null()) return own;
  std::string main;
  const std::string v = RecordOptions::ViewOfPath(path, &main);
  if (v.empty()) return nullptr;
  nlohmann::json meta = ReadMetadata(main);
  const bool alloc = v == kHeapView || FindAllocView(v) != nullptr;
  if (!meta.is_object() || !meta.contains(alloc ? "allocations" : "off_cpu")) return nullptr;
  *view = v;
  return meta;
}

void MarkRecordedView(const std::string& view, symbolize::Profile* profile) {
  if (view.empty()) return;
  if (const AllocView* a = FindAllocView(view); a != nullptr) {
    profile->count_unit = symbolize::AllocViewUnit(a->view);
    profile->weight_unit = profile->count_unit;
    profile->event = a->metric;
    for (symbolize::ProfileStack& s : profile->stacks) s.weight = s.samples;
    return;
  }
  profile->count_unit = "us";
  profile->weight_unit = "nanoseconds";
  profile->event = view == kOffCpuView ? "off-cpu" : "wall";
  for (symbolize::ProfileStack& s : profile->stacks) {
    s.weight = s.samples * 1000;
    // A wall view mixes both halves and the folded file does not say which stack is which.
    s.off_cpu = view == kOffCpuView;
  }
}

}  // namespace nativeprof::tools
