#include "output/pprof_writer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
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

// Encodes one Profile. Each part is one method; Encode() calls them in an order that fixes the
// string table's order (every part interns into it), so the bytes stay deterministic.
class PprofEncoder {
 public:
  explicit PprofEncoder(const Profile& profile)
      : profile_(profile),
        two_values_(WeightsAreTime(profile)),
        time_split_(profile.count_unit == "us"),
        value_type_(profile.event == "cpu-clock" || profile.event == "task-clock"
                        ? "cpu"
                        : (profile.event.empty() ? "weight" : profile.event)) {}

  std::string Encode() {
    std::string result = SampleTypes();
    CollectMappings();
    const std::string functions = EncodeFunctions();
    const std::string samples = EncodeSamples();  // also fills locations_
    // Field order does not matter to protobuf parsers; the string table goes last because every
    // other part interns strings into it.
    result += samples;
    result += EncodeMappings();
    result += locations_;
    result += functions;
    result += EncodeTail();
    return result;
  }

 private:
  std::string ValueType(const std::string& type, const std::string& unit) {
    ProtoEncoder m;
    m.Int64(pb::kValueTypeType, strings_.Intern(type));
    m.Int64(pb::kValueTypeUnit, strings_.Intern(unit));
    return m.Take();
  }

  std::string SampleTypes() {
    ProtoEncoder out;
    if (!profile_.sample_types.empty()) {
      for (const symbolize::SampleType& t : profile_.sample_types) {
        out.Bytes(pb::kProfileSampleType, ValueType(t.type, t.unit));
      }
      return out.Take();
    }
    if (time_split_) {
      // A time profile (--off-cpu): one file, three views of the same time, picked with
      // pprof -sample_index=cpu|off_cpu|wall.
      for (const char* type : {"cpu", "off_cpu", "wall"}) {
        out.Bytes(pb::kProfileSampleType, ValueType(type, "nanoseconds"));
      }
      return out.Take();
    }
    out.Bytes(pb::kProfileSampleType, ValueType("samples", "count"));
    if (two_values_) {
      out.Bytes(pb::kProfileSampleType, ValueType(value_type_, profile_.weight_unit));
    }
    return out.Take();
  }

  // Mappings: one per distinct (module, build id). Interns nothing: EncodeMappings does, last.
  void CollectMappings() {
    absl::flat_hash_map<std::string, uint64_t> ids;
    frame_mapping_.assign(profile_.frames.size(), 0);
    for (size_t i = 0; i < profile_.frames.size(); ++i) {
      const ProfileFrame& f = profile_.frames[i];
      if (f.module.empty() && f.build_id.empty()) continue;
      auto [it, inserted] =
          ids.try_emplace(absl::StrCat(f.module, "\n", f.build_id), mappings_.size() + 1);
      if (inserted) {
        MappingInfo m;
        m.id = it->second;
        m.file = f.module;
        m.build_id = f.build_id;
        mappings_.push_back(std::move(m));
      }
      MappingInfo& m = mappings_[it->second - 1];
      m.limit = std::max(m.limit, f.module_offset + 1);
      m.has_lines |= f.line != 0;
      m.has_inline |= f.kind == ProfileFrameKind::kInlined;
      frame_mapping_[i] = it->second;
    }
  }

  // Functions: one per distinct (name, file).
  std::string EncodeFunctions() {
    absl::flat_hash_map<std::pair<std::string, std::string>, uint64_t> ids;
    frame_function_.assign(profile_.frames.size(), 0);
    ProtoEncoder out;
    ProtoEncoder fn;
    for (size_t i = 0; i < profile_.frames.size(); ++i) {
      const ProfileFrame& f = profile_.frames[i];
      const std::string& name = f.function.empty() ? std::string("[unknown]") : f.function;
      auto [it, inserted] = ids.try_emplace(std::make_pair(name, f.file), ids.size() + 1);
      if (inserted) {
        fn.Clear();
        fn.Varint(pb::kFunctionId, it->second);
        const int64_t n = strings_.Intern(name);
        fn.Int64(pb::kFunctionName, n);
        fn.Int64(pb::kFunctionSystemName, n);
        if (!f.file.empty()) fn.Int64(pb::kFunctionFilename, strings_.Intern(f.file));
        out.Bytes(pb::kProfileFunction, fn.data());
      }
      frame_function_[i] = it->second;
    }
    return out.Take();
  }

  // The Location of a non-inlined frame plus the inlined frames after it (root-first), keyed by
  // that frame-index run; a new one is appended to locations_.
  uint64_t LocationFor(const std::vector<uint32_t>& run) {
    auto [it, inserted] = location_ids_.try_emplace(run, location_ids_.size() + 1);
    if (!inserted) return it->second;
    // The Location's address and mapping come from the outermost (caller) frame.
    ProtoEncoder loc;
    loc.Varint(pb::kLocationId, it->second);
    const uint32_t outer = run.front();
    if (outer < profile_.frames.size()) {
      if (frame_mapping_[outer] != 0) {
        loc.Varint(pb::kLocationMappingId, frame_mapping_[outer]);
        loc.Varint(pb::kLocationAddress, profile_.frames[outer].module_offset);
      }
      ProtoEncoder line;
      for (size_t k = run.size(); k-- > 0;) {  // innermost first, caller last
        if (run[k] >= profile_.frames.size()) continue;
        line.Clear();
        line.Varint(pb::kLineFunctionId, frame_function_[run[k]]);
        if (profile_.frames[run[k]].line != 0) {
          line.Int64(pb::kLineLine, profile_.frames[run[k]].line);
        }
        loc.Bytes(pb::kLocationLine, line.data());
      }
    }
    ProtoEncoder field;
    field.Bytes(pb::kProfileLocation, loc.data());
    locations_ += field.data();
    return it->second;
  }

  // Location ids of a stack, leaf first (samples list them that way; stacks are root-first).
  std::vector<uint64_t> LeafFirstLocations(const ProfileStack& s) {
    std::vector<uint64_t> root_first;
    std::vector<uint32_t> run;
    size_t i = 0;
    while (i < s.frames.size()) {
      run.clear();
      run.push_back(s.frames[i++]);
      while (i < s.frames.size() && s.frames[i] < profile_.frames.size() &&
             profile_.frames[s.frames[i]].kind == ProfileFrameKind::kInlined) {
        run.push_back(s.frames[i++]);
      }
      root_first.push_back(LocationFor(run));
    }
    return std::vector<uint64_t>(root_first.rbegin(), root_first.rend());
  }

  void AppendLabel(int64_t key, const int64_t* str, const int64_t* num, ProtoEncoder* sample) {
    ProtoEncoder label;
    label.Int64(pb::kLabelKey, key);
    if (str != nullptr) label.Int64(pb::kLabelStr, *str);
    if (num != nullptr) label.Int64(pb::kLabelNum, *num);
    sample->Bytes(pb::kSampleLabel, label.data());
  }

  std::string EncodeSamples() {
    const int64_t thread_key = strings_.Intern("thread");
    const int64_t pid_key = strings_.Intern("pid");
    const int64_t tid_key = strings_.Intern("tid");
    ProtoEncoder out;
    ProtoEncoder sample;
    for (const ProfileStack& s : profile_.stacks) {
      if (s.samples == 0) continue;
      sample.Clear();
      sample.PackedVarints(pb::kSampleLocationId, LeafFirstLocations(s));
      std::vector<uint64_t> values;
      if (!profile_.sample_types.empty()) {
        values = s.values;
        values.resize(profile_.sample_types.size());
      } else if (time_split_) {
        values = {s.off_cpu ? 0 : s.weight, s.off_cpu ? s.weight : 0, s.weight};
      } else {
        values = {s.samples};
        if (two_values_) values.push_back(s.weight);
      }
      sample.PackedVarints(pb::kSampleValue, values);
      if (!s.thread_name.empty()) {
        const int64_t name = strings_.Intern(s.thread_name);
        AppendLabel(thread_key, &name, nullptr, &sample);
      }
      if (s.pid != 0) {
        const int64_t pid = s.pid;
        AppendLabel(pid_key, nullptr, &pid, &sample);
      }
      if (s.tid != 0) {
        const int64_t tid = s.tid;
        AppendLabel(tid_key, nullptr, &tid, &sample);
      }
      for (const auto& [key, value] : s.labels) {
        const int64_t str = strings_.Intern(value);
        AppendLabel(strings_.Intern(key), &str, nullptr, &sample);
      }
      out.Bytes(pb::kProfileSample, sample.data());
    }
    return out.Take();
  }

  // pprof takes the first mapping for the main binary (its "File:" line, and where it looks for
  // symbols): the program whose `_start` was sampled, else the first module that is not a shared
  // object or pseudo-module, goes first. Mapping ids stay as they were.
  std::vector<size_t> MappingOrder() const {
    std::vector<size_t> order(mappings_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto is_program = [](const std::string& path) {
      const std::string_view base = std::string_view(path).substr(path.rfind('/') + 1);
      return !base.empty() && base.front() != '[' && base.find(".so") == std::string_view::npos;
    };
    size_t main = mappings_.size();
    for (size_t i = 0; i < profile_.frames.size() && main == mappings_.size(); ++i) {
      // The dynamic loader has a `_start` too.
      if (profile_.frames[i].function == "_start" && frame_mapping_[i] != 0 &&
          is_program(mappings_[frame_mapping_[i] - 1].file)) {
        main = frame_mapping_[i] - 1;
      }
    }
    for (size_t i = 0; i < mappings_.size() && main == mappings_.size(); ++i) {
      if (is_program(mappings_[i].file)) main = i;
    }
    if (main < mappings_.size()) std::rotate(order.begin(), order.begin() + main,
                                             order.begin() + main + 1);
    return order;
  }

  std::string EncodeMappings() {
    ProtoEncoder out;
    ProtoEncoder m;
    for (size_t index : MappingOrder()) {
      const MappingInfo& info = mappings_[index];
      m.Clear();
      m.Varint(pb::kMappingId, info.id);
      m.Varint(pb::kMappingMemoryStart, 0);
      m.Varint(pb::kMappingMemoryLimit, info.limit);
      m.Varint(pb::kMappingFileOffset, 0);
      if (!info.file.empty()) m.Int64(pb::kMappingFilename, strings_.Intern(info.file));
      if (!info.build_id.empty()) m.Int64(pb::kMappingBuildId, strings_.Intern(info.build_id));
      m.Varint(pb::kMappingHasFunctions, 1);
      if (info.has_lines) {
        m.Varint(pb::kMappingHasFilenames, 1);
        m.Varint(pb::kMappingHasLineNumbers, 1);
      }
      if (info.has_inline) m.Varint(pb::kMappingHasInlineFrames, 1);
      out.Bytes(pb::kProfileMapping, m.data());
    }
    return out.Take();
  }

  // Duration, period, default sample type, comment, and the string table.
  std::string EncodeTail() {
    ProtoEncoder tail;
    if (profile_.duration_ns != 0) tail.Int64(pb::kProfileDurationNanos, profile_.duration_ns);
    if (!profile_.sample_types.empty()) {
      if (profile_.period != 0) {
        tail.Bytes(pb::kProfilePeriodType,
                   ValueType(profile_.period_type.type, profile_.period_type.unit));
        tail.Int64(pb::kProfilePeriod, static_cast<int64_t>(profile_.period));
      }
      if (!profile_.default_sample_type.empty()) {
        tail.Int64(pb::kProfileDefaultSampleType, strings_.Intern(profile_.default_sample_type));
      }
    } else if (time_split_) {
      // The CPU half is sampled: its period is the sampling interval, as in a CPU profile (the
      // off-CPU half is measured, switch to switch, and has none).
      if (!profile_.is_off_cpu_view() && profile_.sample_frequency_hz != 0) {
        tail.Bytes(pb::kProfilePeriodType, ValueType("cpu", "nanoseconds"));
        tail.Int64(pb::kProfilePeriod, 1000000000 / profile_.sample_frequency_hz);
      }
      // An off-CPU view alone (`convert` of OUT.offcpu.folded) is all off-CPU time: pprof opens
      // on that, not on a "wall" type holding the same numbers under another name.
      tail.Int64(pb::kProfileDefaultSampleType,
                 strings_.Intern(profile_.is_off_cpu_view() ? "off_cpu" : "wall"));
    } else if (two_values_) {
      tail.Bytes(pb::kProfilePeriodType, ValueType(value_type_, profile_.weight_unit));
      if (profile_.sample_frequency_hz != 0 && profile_.weight_unit == "nanoseconds") {
        tail.Int64(pb::kProfilePeriod, 1000000000 / profile_.sample_frequency_hz);
      }
      // pprof shows the last sample type by default already; naming it keeps that explicit.
      tail.Int64(pb::kProfileDefaultSampleType, strings_.Intern(value_type_));
    }
    tail.Int64(pb::kProfileComment, strings_.Intern(Comment()));
    for (const std::string& s : strings_.strings()) tail.Bytes(pb::kProfileStringTable, s);
    return tail.Take();
  }

  // What pprof prints first (`-raw`, the web UI's legend): the event, or for a time profile what
  // its two halves were measured with ("wall" and "off-cpu" are views, not perf events).
  std::string Comment() const {
    if (profile_.event.empty()) return "nativeprof";
    if (time_split_ && profile_.is_off_cpu_view()) {
      return "nativeprof, off-CPU time: each context switch's stack weighted by the time until "
             "its thread ran again";
    }
    if (time_split_) {
      return "nativeprof, wall time: each thread's on-CPU time (exact, from its context switches) "
             "shared out over its CPU samples by their periods, plus off-CPU time (each context "
             "switch's stack weighted by the time until its thread ran again)";
    }
    return absl::StrCat("nativeprof, event ", profile_.event);
  }

  const Profile& profile_;
  const bool two_values_;
  const bool time_split_;  // cpu / off_cpu / wall nanoseconds instead of samples / weight
  const std::string value_type_;
  StringTable strings_;
  std::vector<MappingInfo> mappings_;
  std::vector<uint64_t> frame_mapping_;   // per frame: its mapping id, 0 for none
  std::vector<uint64_t> frame_function_;  // per frame: its function id
  absl::flat_hash_map<std::vector<uint32_t>, uint64_t> location_ids_;
  std::string locations_;
};

}  // namespace

std::string EncodePprof(const Profile& profile) { return PprofEncoder(profile).Encode(); }

std::string RenderPprof(const Profile& profile) { return GzipCompress(EncodePprof(profile), 1); }

}  // namespace nativeprof::output
