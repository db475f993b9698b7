#include "tools/input_profile.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "base/file_util.h"
#include "output/folded_reader.h"
#include "output/folded_writer.h"
#include "output/profile_writer.h"
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

// Every metadata file read so far, to name when one of them turns out to hold a field of
// another type than record writes (nativeprof_main's catch).
std::vector<std::string>& MetadataRead() {
  static std::vector<std::string> files;
  return files;
}

void NoteMetadataRead(const std::string& file) {
  if (absl::c_find(MetadataRead(), file) == MetadataRead().end()) MetadataRead().push_back(file);
}

nlohmann::json ReadMetadata(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path + ".json");
  if (!text.ok()) return nullptr;
  nlohmann::json meta = ParseMetadata(*text, path);
  if (!meta.is_null()) NoteMetadataRead(path + ".json");
  return meta;
}

// Whether `meta` lists a file named as `path` among its run's outputs (by name: the run may have
// been given paths relative to another directory).
bool ListsFile(const nlohmann::json& meta, const std::string& path) {
  auto lists = [&](const nlohmann::json& owner) {
    if (!owner.is_object() || !owner.contains("outputs") || !owner["outputs"].is_array()) {
      return false;
    }
    for (const nlohmann::json& file : owner["outputs"]) {
      if (file.is_object() && file.contains("path") && file["path"].is_string() &&
          BaseNameOf(file["path"].get_ref<const std::string&>()) == BaseNameOf(path)) {
        return true;
      }
    }
    return false;
  };
  return lists(meta) || (meta.contains("off_cpu") && lists(meta["off_cpu"])) ||
         (meta.contains("allocations") && lists(meta["allocations"]));
}

// The file's modification time in nanoseconds; nullopt when it cannot be read.
std::optional<int64_t> ModifiedNs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// The names another output of the run that wrote `output` may have beside it (its stem, and the
// stem with each output extension), whose metadata JSON may be that run's.
std::vector<std::string> RunOutputsBeside(const std::string& output) {
  const size_t ext = output::OutputExtensionOf(output).size();
  const std::string stem = output.substr(0, output.size() - ext);
  std::vector<std::string> names = {stem};
  for (const output::OutputExtension& e : output::kOutputExtensions) {
    names.push_back(absl::StrCat(stem, e.ext));
  }
  return names;
}

// The metadata of the run that wrote `output`: beside it (taken as it is: a renamed recording's
// lists its old names), unless a newer one beside another output lists `listed` (record writes
// it beside the first -o only, which need not be the folded one: `-o p.svg -o p.folded` puts it
// in p.svg.json, and a p.folded.json beside it is an earlier run's). Such another output's JSON
// must also not be older than `listed` (record writes the metadata last), give or take the
// seconds a copy of the directory (`cp -r`) puts between them; one that is not JSON is passed
// over in silence.
nlohmann::json ReadRunMetadata(const std::string& output, const std::string& listed) {
  nlohmann::json own = ReadMetadata(output);
  const std::optional<int64_t> own_ns = ModifiedNs(output + ".json");
  constexpr int64_t kCopySlackNs = 2'000'000'000;
  const std::optional<int64_t> listed_ns = ModifiedNs(listed);
  nlohmann::json newest;
  std::optional<int64_t> newest_ns;
  for (const std::string& sibling : RunOutputsBeside(output)) {
    if (sibling == output) continue;
    const std::optional<int64_t> written_ns = ModifiedNs(sibling + ".json");
    if (!written_ns.has_value()) continue;
    if (listed_ns.has_value() && *written_ns < *listed_ns - kCopySlackNs) continue;
    if (newest_ns.has_value() && *written_ns <= *newest_ns) continue;
    if (!own.is_null() && own_ns.has_value() && *written_ns <= *own_ns) continue;
    absl::StatusOr<std::string> text = ReadSmallFile(sibling + ".json");
    if (!text.ok()) continue;
    nlohmann::json meta = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!meta.is_object() || !ListsFile(meta, listed)) continue;
    newest = std::move(meta);
    newest_ns = written_ns;
    NoteMetadataRead(sibling + ".json");
  }
  return newest.is_null() ? own : newest;
}

}  // namespace

absl::Status CheckOutputsSpareInputs(const std::vector<std::string>& outputs,
                                     const std::vector<std::string>& inputs) {
  // Each path stat()ed once; outputs that do not exist yet (the usual case) replace nothing.
  std::vector<std::pair<const std::string*, RegularFileId>> existing;
  for (const std::string& out : outputs) {
    std::optional<RegularFileId> id = RegularFileIdOf(out);
    if (!id.has_value()) continue;
    if (absl::Status st = CheckNotOverwritingNonProfile(out); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", st.message(), "; nothing was overwritten"));
    }
    existing.emplace_back(&out, *id);
  }
  if (existing.empty()) return absl::OkStatus();
  // Each input, and every JSON ReadRecordMetadata may read for it: its own, and those beside
  // its recording's other outputs (ReadRunMetadata's, of the view's main file too).
  struct ReadFile {
    std::string file;
    const std::string* input;  // the input it is read with
    std::optional<RegularFileId> id;
  };
  std::vector<ReadFile> read;
  auto add = [&read](std::string file, const std::string& in) {
    std::optional<RegularFileId> id = RegularFileIdOf(file);
    read.push_back(ReadFile{std::move(file), &in, id});
  };
  for (const std::string& in : inputs) {
    add(in, in);
    add(in + ".json", in);
    std::string main;
    std::vector<std::string> owners = {in};
    if (!RecordOptions::ViewOfPath(in, &main).empty()) owners.push_back(main);
    for (const std::string& owner : owners) {
      for (const std::string& sibling : RunOutputsBeside(owner)) add(sibling + ".json", in);
    }
  }
  for (const auto& [out, out_id] : existing) {
    for (const ReadFile& r : read) {
      if (r.id != out_id) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", *out,
          r.file == *r.input ? absl::StrCat(" is the input ", *r.input)
                             : absl::StrCat(" is the recording's metadata read with ", *r.input),
          ", which it would replace"));
    }
  }
  return absl::OkStatus();
}

const std::vector<std::string>& MetadataFilesRead() { return MetadataRead(); }

nlohmann::json ReadRecordMetadata(const std::string& path, std::string* view) {
  std::string main;
  const std::string v = RecordOptions::ViewOfPath(path, &main);
  if (v.empty()) return ReadRunMetadata(path, path);
  nlohmann::json own = ReadMetadata(path);
  if (!own.is_null()) return own;
  nlohmann::json meta = ReadRunMetadata(main, path);
  const bool alloc = v == kHeapView || FindAllocView(v) != nullptr;
  const char* section = alloc ? "allocations" : "off_cpu";
  if (!meta.is_object() || !meta.contains(section) || !meta[section].is_object()) {
    // The name alone does not make it a view (a CPU profile may be called server.peak.folded),
    // but a view read as samples is read in the wrong unit: say why.
    std::fprintf(stderr,
                 "nativeprof: %s is named like the .%s. view of a recording, but no metadata of "
                 "that recording with %s could be read (%s.json): its counts are read as samples; "
                 "keep the metadata JSON beside it\n",
                 path.c_str(), v.c_str(), alloc ? "allocations" : "off-CPU time", main.c_str());
    return nullptr;
  }
  *view = v;
  return meta;
}

namespace {

// A stack as its folded line names it (thread and frames): the key two views of one recording
// share for the same stack.
std::string FoldedLineKey(const symbolize::Profile& p, const symbolize::ProfileStack& s) {
  std::string key = output::SanitizeFoldedName(s.thread_name);
  for (uint32_t f : s.frames) absl::StrAppend(&key, ";", output::FoldedFrameName(p.frames[f]));
  return key;
}

// Splits each stack of the wall view at `wall_path` into the off-CPU time the off-CPU view beside
// it gives that line and the rest (rounding to microseconds can leave the off-CPU part 1 us above
// the line: it is capped there).
void SplitWallView(const std::string& wall_path, symbolize::Profile* profile) {
  std::string main;
  if (RecordOptions::ViewOfPath(wall_path, &main) != kWallView) return;
  absl::StatusOr<symbolize::Profile> off =
      output::ReadFoldedFile(RecordOptions::ViewPath(main, kOffCpuView));
  if (!off.ok()) return;
  absl::flat_hash_map<std::string, uint64_t> off_us;
  for (const symbolize::ProfileStack& s : off->stacks) off_us[FoldedLineKey(*off, s)] += s.samples;
  // Off-CPU time the wall view has no room for: a sibling from another recording, or edited.
  uint64_t unmatched_us = 0;
  const size_t wall_stacks = profile->stacks.size();
  for (size_t i = 0; i < wall_stacks; ++i) {
    auto it = off_us.find(FoldedLineKey(*profile, profile->stacks[i]));
    if (it == off_us.end()) continue;
    symbolize::ProfileStack& s = profile->stacks[i];
    const uint64_t off_part = std::min(it->second, s.samples);
    if (it->second > s.samples + 1) unmatched_us += it->second - s.samples;
    it->second = 0;  // matched
    if (off_part == s.samples) {
      s.off_cpu = true;
      continue;
    }
    symbolize::ProfileStack off_stack = s;
    off_stack.samples = off_part;
    off_stack.off_cpu = true;
    s.samples -= off_part;
    profile->stacks.push_back(std::move(off_stack));  // after the last use of `s`
  }
  for (const auto& [key, us] : off_us) unmatched_us += us;
  if (unmatched_us != 0) {
    std::fprintf(stderr,
                 "nativeprof: warning: %s does not match %s: %llu us of its off-CPU time are on "
                 "no line of the wall view, which is read as CPU time where they differ; keep "
                 "the two files of one recording together\n",
                 RecordOptions::ViewPath(main, kOffCpuView).c_str(), wall_path.c_str(),
                 static_cast<unsigned long long>(unmatched_us));
  }
}

}  // namespace

absl::Status MarkRecordedView(const std::string& path, const std::string& view,
                              symbolize::Profile* profile) {
  // The heap profile is pprof only: a folded file named so is read as what it holds.
  if (view.empty() || view == kHeapView) return absl::OkStatus();
  if (const AllocView* a = FindAllocView(view); a != nullptr) {
    profile->count_unit = symbolize::AllocViewUnit(a->view);
    profile->weight_unit = profile->count_unit;
    profile->event = a->metric;
    profile->sample_types = {symbolize::AllocSampleTypeOf(a->view)};
    profile->default_sample_type = profile->sample_types.front().type;
    for (symbolize::ProfileStack& s : profile->stacks) {
      s.weight = s.samples;
      s.values = {s.samples};
    }
    return absl::OkStatus();
  }
  uint64_t total_us = 0;
  for (const symbolize::ProfileStack& s : profile->stacks) total_us += s.samples;
  if (total_us > output::kMaxFoldedTotal / 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " holds ", total_us, " us, more time than 64 bits of nanoseconds hold (292 years)"));
  }
  profile->count_unit = "us";
  profile->weight_unit = "nanoseconds";
  profile->event = view == kOffCpuView ? "off-cpu" : "wall";
  if (view == kWallView) SplitWallView(path, profile);
  for (symbolize::ProfileStack& s : profile->stacks) {
    s.weight = s.samples * 1000;
    if (view == kOffCpuView) s.off_cpu = true;
  }
  return absl::OkStatus();
}

}  // namespace nativeprof::tools
