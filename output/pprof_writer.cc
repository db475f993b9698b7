#include "output/pprof_writer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "output/protobuf_encoder.h"

namespace nativeprof::output {

using symbolize::Profile;
using symbolize::ProfileFrame;
using symbolize::ProfileFrameKind;
using symbolize::ProfileStack;

namespace {

// Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto), written down from
// its documentation.
namespace pb {
constexpr uint32_t kProfileSampleType = 1, kProfileSample = 2, kProfileMapping = 3,
                   kProfileLocation = 4, kProfileFunction = 5, kProfileStringTable = 6,
                   kProfileDurationNanos = 10, kProfilePeriodType = 11, kProfilePeriod = 12,
                   kProfileComment = 13, kProfileDefaultSampleType = 14;
constexpr uint32_t kValueTypeType = 1, kValueTypeUnit = 2;
constexpr uint32_t kSampleLocationId = 1, kSampleValue = 2, kSampleLabel = 3;
constexpr uint32_t kLabelKey = 1, kLabelStr = 2, kLabelNum = 3;
constexpr uint32_t kMappingId = 1, kMappingMemoryStart = 2, kMappingMemoryLimit = 3,
                   kMappingFileOffset = 4, kMappingFilename = 5, kMappingBuildId = 6,
                   kMappingHasFunctions = 7, kMappingHasFilenames = 8,
                   kMappingHasLineNumbers = 9, kMappingHasInlineFrames = 10;
constexpr uint32_t kLocationId = 1, kLocationMappingId = 2, kLocationAddress = 3,
                   kLocationLine = 4;
constexpr uint32_t kLineFunctionId = 1, kLineLine = 2;
constexpr uint32_t kFunctionId = 1, kFunctionName = 2, kFunctionSystemName = 3,
                   kFunctionFilename = 4;
}  // namespace pb

class StringTable {
 public:
  StringTable() { Intern(""); }  // index 0 must be the empty string
  int64_t Intern(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  absl::flat_hash_map<std::string, int64_t> ids_;
  std::vector<std::string> strings_;
};

struct MappingInfo {
  uint64_t id = 0;
  uint64_t limit = 0;  // highest offset seen + 1
  std::string file;
  std::string build_id;
  bool has_lines = false;
  bool has_inline = false;
};

bool WeightsAreTime(const Profile& p) {
  return p.weight_unit != "samples" && !p.weight_unit.empty();
}

}  // namespace

std::string EncodePprof(const Profile& profile) {
  StringTable strings;
  ProtoEncoder out;
  ProtoEncoder msg;
  ProtoEncoder sub;

  const bool two_values = WeightsAreTime(profile);
  const bool cpu = profile.event == "cpu-clock" || profile.event == "task-clock";
  const std::string value_type = cpu ? "cpu" : (profile.event.empty() ? "weight" : profile.event);

  auto value_type_msg = [&](const std::string& type, const std::string& unit) {
    sub.Clear();
    sub.Int64(pb::kValueTypeType, strings.Intern(type));
    sub.Int64(pb::kValueTypeUnit, strings.Intern(unit));
    return sub.Take();
  };
  out.Bytes(pb::kProfileSampleType, value_type_msg("samples", "count"));
  if (two_values) {
    out.Bytes(pb::kProfileSampleType, value_type_msg(value_type, profile.weight_unit));
  }

  // Mappings: one per distinct (module, build id).
  absl::flat_hash_map<std::string, uint64_t> mapping_ids;
  std::vector<MappingInfo> mappings;
  std::vector<uint64_t> frame_mapping(profile.frames.size(), 0);
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& f = profile.frames[i];
    if (f.module.empty() && f.build_id.empty()) continue;
    std::string key = absl::StrCat(f.module, "\n", f.build_id);
    auto [it, inserted] = mapping_ids.try_emplace(key, mappings.size() + 1);
    if (inserted) {
      MappingInfo m;
      m.id = it->second;
      m.file = f.module;
      m.build_id = f.build_id;
      mappings.push_back(std::move(m));
    }
    MappingInfo& m = mappings[it->second - 1];
    m.limit = std::max(m.limit, f.module_offset + 1);
    m.has_lines |= f.line != 0;
    m.has_inline |= f.kind == ProfileFrameKind::kInlined;
    frame_mapping[i] = it->second;
  }

  // Functions: one per distinct (name, file).
  absl::flat_hash_map<std::pair<std::string, std::string>, uint64_t> function_ids;
  std::vector<uint64_t> frame_function(profile.frames.size(), 0);
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& f = profile.frames[i];
    const std::string& name = f.function.empty() ? std::string("[unknown]") : f.function;
    auto [it, inserted] = function_ids.try_emplace(std::make_pair(name, f.file),
                                                   function_ids.size() + 1);
    if (inserted) {
      sub.Clear();
      sub.Varint(pb::kFunctionId, it->second);
      const int64_t n = strings.Intern(name);
      sub.Int64(pb::kFunctionName, n);
      sub.Int64(pb::kFunctionSystemName, n);
      if (!f.file.empty()) sub.Int64(pb::kFunctionFilename, strings.Intern(f.file));
      msg.Bytes(pb::kProfileFunction, sub.data());
    }
    frame_function[i] = it->second;
  }
  const std::string functions_bytes = msg.Take();

  // Locations: a non-inlined frame plus the inlined frames after it (root-first), keyed by the
  // frame-index run. Samples list locations leaf first.
  absl::flat_hash_map<std::vector<uint32_t>, uint64_t> location_ids;
  std::string locations_bytes;
  std::vector<uint32_t> run;
  std::vector<uint64_t> loc_stack;
  std::vector<uint64_t> values;
  ProtoEncoder samples;
  ProtoEncoder label;
  const int64_t thread_key = strings.Intern("thread");
  const int64_t pid_key = strings.Intern("pid");
  const int64_t tid_key = strings.Intern("tid");
  for (const ProfileStack& s : profile.stacks) {
    if (s.samples == 0) continue;
    loc_stack.clear();
    size_t i = 0;
    while (i < s.frames.size()) {
      run.clear();
      run.push_back(s.frames[i++]);
      while (i < s.frames.size() && s.frames[i] < profile.frames.size() &&
             profile.frames[s.frames[i]].kind == ProfileFrameKind::kInlined) {
        run.push_back(s.frames[i++]);
      }
      auto [it, inserted] = location_ids.try_emplace(run, location_ids.size() + 1);
      if (inserted) {
        // The Location's address and mapping come from the outermost (caller) frame.
        sub.Clear();
        sub.Varint(pb::kLocationId, it->second);
        const uint32_t outer = run.front();
        if (outer < profile.frames.size()) {
          if (frame_mapping[outer] != 0) {
            sub.Varint(pb::kLocationMappingId, frame_mapping[outer]);
            sub.Varint(pb::kLocationAddress, profile.frames[outer].module_offset);
          }
          ProtoEncoder line;
          for (size_t k = run.size(); k-- > 0;) {  // innermost first, caller last
            if (run[k] >= profile.frames.size()) continue;
            line.Clear();
            line.Varint(pb::kLineFunctionId, frame_function[run[k]]);
            if (profile.frames[run[k]].line != 0) {
              line.Int64(pb::kLineLine, profile.frames[run[k]].line);
            }
            sub.Bytes(pb::kLocationLine, line.data());
          }
        }
        msg.Clear();
        msg.Bytes(pb::kProfileLocation, sub.data());
        locations_bytes += msg.data();
      }
      loc_stack.push_back(it->second);
    }
    std::vector<uint64_t> leaf_first(loc_stack.rbegin(), loc_stack.rend());
    sub.Clear();
    sub.PackedVarints(pb::kSampleLocationId, leaf_first);
    values.clear();
    values.push_back(s.samples);
    if (two_values) values.push_back(s.weight);
    sub.PackedVarints(pb::kSampleValue, values);
    if (!s.thread_name.empty()) {
      label.Clear();
      label.Int64(pb::kLabelKey, thread_key);
      label.Int64(pb::kLabelStr, strings.Intern(s.thread_name));
      sub.Bytes(pb::kSampleLabel, label.data());
    }
    if (s.pid != 0) {
      label.Clear();
      label.Int64(pb::kLabelKey, pid_key);
      label.Int64(pb::kLabelNum, s.pid);
      sub.Bytes(pb::kSampleLabel, label.data());
    }
    if (s.tid != 0) {
      label.Clear();
      label.Int64(pb::kLabelKey, tid_key);
      label.Int64(pb::kLabelNum, s.tid);
      sub.Bytes(pb::kSampleLabel, label.data());
    }
    samples.Bytes(pb::kProfileSample, sub.data());
  }

  // Field order does not matter to protobuf parsers; the string table goes last because every
  // other part interns strings into it.
  std::string result = out.Take();
  result += samples.Take();
  for (const MappingInfo& m : mappings) {
    sub.Clear();
    sub.Varint(pb::kMappingId, m.id);
    sub.Varint(pb::kMappingMemoryStart, 0);
    sub.Varint(pb::kMappingMemoryLimit, m.limit);
    sub.Varint(pb::kMappingFileOffset, 0);
    if (!m.file.empty()) sub.Int64(pb::kMappingFilename, strings.Intern(m.file));
    if (!m.build_id.empty()) sub.Int64(pb::kMappingBuildId, strings.Intern(m.build_id));
    sub.Varint(pb::kMappingHasFunctions, 1);
    if (m.has_lines) {
      sub.Varint(pb::kMappingHasFilenames, 1);
      sub.Varint(pb::kMappingHasLineNumbers, 1);
    }
    if (m.has_inline) sub.Varint(pb::kMappingHasInlineFrames, 1);
    msg.Clear();
    msg.Bytes(pb::kProfileMapping, sub.data());
    result += msg.data();
  }
  result += locations_bytes;
  result += functions_bytes;

  ProtoEncoder tail;
  if (profile.duration_ns != 0) tail.Int64(pb::kProfileDurationNanos, profile.duration_ns);
  if (two_values) {
    tail.Bytes(pb::kProfilePeriodType, value_type_msg(value_type, profile.weight_unit));
    if (profile.sample_frequency_hz != 0 && profile.weight_unit == "nanoseconds") {
      tail.Int64(pb::kProfilePeriod, 1000000000 / profile.sample_frequency_hz);
    }
    // pprof shows the last sample type by default already; naming it keeps that explicit.
    tail.Int64(pb::kProfileDefaultSampleType, strings.Intern(value_type));
  }
  const std::string comment = profile.event.empty()
                                  ? std::string("nativeprof")
                                  : absl::StrCat("nativeprof, event ", profile.event);
  tail.Int64(pb::kProfileComment, strings.Intern(comment));
  for (const std::string& s : strings.strings()) tail.Bytes(pb::kProfileStringTable, s);
  result += tail.Take();
  return result;
}

std::string RenderPprof(const Profile& profile) { return GzipCompress(EncodePprof(profile), 1); }

}  // namespace nativeprof::output
