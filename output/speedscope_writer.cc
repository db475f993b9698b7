#include "output/speedscope_writer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "output/json_util.h"

namespace nativeprof::output {

using symbolize::Profile;
using symbolize::ProfileFrame;
using symbolize::ProfileStack;

namespace {

struct Thread {
  std::string name;  // the name that carries most of its weight (a thread may be renamed)
  absl::flat_hash_map<std::string, uint64_t> weight_by_name;
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t total = 0;
  std::vector<uint32_t> samples;  // stack indexes, in output order
  std::vector<uint64_t> weights;
};

}  // namespace

std::string RenderSpeedscope(const Profile& profile, const std::string& name) {
  const bool nanoseconds = profile.weight_unit == "nanoseconds";
  auto weight_of = [&](const ProfileStack& s) { return nanoseconds ? s.weight : s.samples; };

  // Shared frames, deduplicated by what speedscope displays.
  std::string frames_json;
  absl::flat_hash_map<std::tuple<std::string, std::string, uint32_t>, uint32_t> frame_ids;
  std::vector<uint32_t> frame_map(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& f = profile.frames[i];
    std::string display = absl::StrCat(f.function.empty() ? "[unknown]" : f.function,
                                       symbolize::ProfileFrameKindSuffix(f.kind));
    auto [it, inserted] = frame_ids.try_emplace(std::make_tuple(display, f.file, f.line),
                                                static_cast<uint32_t>(frame_ids.size()));
    if (inserted) {
      frames_json.append(it->second == 0 ? "{\"name\":" : ",{\"name\":");
      AppendJsonString(&frames_json, display);
      if (!f.file.empty()) {
        frames_json.append(",\"file\":");
        AppendJsonString(&frames_json, f.file);
        if (f.line != 0) absl::StrAppend(&frames_json, ",\"line\":", f.line);
      }
      frames_json.push_back('}');
    }
    frame_map[i] = it->second;
  }

  // Threads: one profile per tid, whatever names it had (a new thread runs under its creator's
  // name until it names itself). A profile read from a folded file has no ids: its threads are
  // told apart by name alone.
  absl::flat_hash_map<std::tuple<int32_t, int32_t, std::string>, size_t> thread_ids;
  std::vector<Thread> threads;
  std::vector<size_t> stack_thread(profile.stacks.size());
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const ProfileStack& s = profile.stacks[i];
    const bool has_ids = s.pid != 0 || s.tid != 0;
    auto [it, inserted] = thread_ids.try_emplace(
        std::make_tuple(s.pid, s.tid, has_ids ? std::string() : s.thread_name), threads.size());
    if (inserted) {
      Thread t;
      t.pid = s.pid;
      t.tid = s.tid;
      threads.push_back(std::move(t));
    }
    Thread& t = threads[it->second];
    uint64_t& named = t.weight_by_name[s.thread_name];
    named += weight_of(s);
    const uint64_t best = t.name == s.thread_name || inserted ? 0 : t.weight_by_name[t.name];
    if (inserted || named > best) t.name = s.thread_name;
    stack_thread[i] = it->second;
  }
  if (profile.timeline.empty()) {
    for (size_t i = 0; i < profile.stacks.size(); ++i) {
      const ProfileStack& s = profile.stacks[i];
      if (s.samples == 0) continue;
      Thread& t = threads[stack_thread[i]];
      t.samples.push_back(static_cast<uint32_t>(i));
      t.weights.push_back(weight_of(s));
      t.total += weight_of(s);
    }
  } else {
    for (const symbolize::TimedSample& ts : profile.timeline) {
      if (ts.stack >= profile.stacks.size()) continue;
      const ProfileStack& s = profile.stacks[ts.stack];
      // A time profile's samples field is microseconds, not a count: use the sample's own weight.
      const uint64_t w = ts.weight != 0 ? ts.weight
                         : s.samples == 0 ? 0
                                          : weight_of(s) / s.samples;
      Thread& t = threads[stack_thread[ts.stack]];
      t.samples.push_back(ts.stack);
      t.weights.push_back(w);
      t.total += w;
    }
  }
  std::vector<const Thread*> order;
  for (const Thread& t : threads) {
    if (!t.samples.empty()) order.push_back(&t);
  }
  std::stable_sort(order.begin(), order.end(), [](const Thread* a, const Thread* b) {
    return std::tie(b->total, a->pid, a->tid, a->name) <
           std::tie(a->total, b->pid, b->tid, b->name);
  });

  std::string out;
  out.reserve(frames_json.size() + 64 * profile.stacks.size() + 1024);
  out.append("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":");
  AppendJsonString(&out, name);
  out.append(",\"exporter\":\"nativeprof\",");
  // An index into an empty list of profiles would name none.
  if (!order.empty()) out.append("\"activeProfileIndex\":0,");
  out.append("\"shared\":{\"frames\":[");
  out.append(frames_json);
  out.append("]},\"profiles\":[");
  bool first_thread = true;
  for (const Thread* t : order) {
    if (!first_thread) out.push_back(',');
    first_thread = false;
    std::string title = t->name.empty() ? std::string("[unknown]") : t->name;
    if (t->pid != 0 || t->tid != 0) absl::StrAppend(&title, " (", t->pid, "/", t->tid, ")");
    out.append("\n{\"type\":\"sampled\",\"name\":");
    AppendJsonString(&out, title);
    absl::StrAppend(&out, ",\"unit\":\"",
                    nanoseconds ? "nanoseconds" : profile.count_unit == "bytes" ? "bytes" : "none",
                    "\",\"startValue\":0,\"endValue\":", t->total, ",\"samples\":[");
    for (size_t k = 0; k < t->samples.size(); ++k) {
      out.append(k == 0 ? "[" : ",[");
      const ProfileStack& s = profile.stacks[t->samples[k]];
      for (size_t j = 0; j < s.frames.size(); ++j) {
        if (j != 0) out.push_back(',');
        const uint32_t f = s.frames[j];
        absl::StrAppend(&out, f < frame_map.size() ? frame_map[f] : 0);
      }
      out.push_back(']');
    }
    out.append("],\"weights\":[");
    for (size_t k = 0; k < t->weights.size(); ++k) {
      if (k != 0) out.push_back(',');
      absl::StrAppend(&out, t->weights[k]);
    }
    out.append("]}");
  }
  out.append("]}\n");
  return out;
}

}  // namespace nativeprof::output
