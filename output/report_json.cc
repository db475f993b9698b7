#include "output/report_json.h"

#include <cmath>

#include "output/json_util.h"

namespace nativeprof::output {
namespace {

// Determinism: the document is an ordered_json, so members come out in the order they are added
// here (the documented order), not in hash or insertion-independent order; every share is rounded
// to 6 decimals before it is stored, and nlohmann prints a double as the shortest text that reads
// back to the same value, so 0.48 prints as "0.48" on every run and machine. Members copied from
// FILE.json come from an nlohmann::json, whose objects are ordered by key.
using Json = nlohmann::ordered_json;

double Fixed(double v) { return std::round(v * 1e6) / 1e6; }

double Share(uint64_t k, uint64_t n) {
  return n == 0 ? 0.0 : Fixed(static_cast<double>(k) / static_cast<double>(n));
}

Json Rows(const RankedTable& table, bool by_self, bool sampled) {
  Json rows = Json::array();
  for (const FunctionCounts& f : by_self ? table.by_self : table.by_total) {
    const uint64_t k = by_self ? f.self : f.total;
    const Interval ci = WilsonInterval(k, table.samples, 0.95);
    Json row;
    row["name"] = f.name;
    row["self"] = f.self;
    row["total"] = f.total;
    row["self_share"] = Share(f.self, table.samples);
    row["total_share"] = Share(f.total, table.samples);
    // Time profiles (off-CPU, wall) measure time: no sampling interval applies.
    row["interval"] = sampled ? Json::array({Fixed(ci.low), Fixed(ci.high)}) : Json();
    row["noise"] = sampled && IsNoise(k, table.samples);
    rows.push_back(std::move(row));
  }
  return rows;
}

Json Table(const RankedTable& table, const std::string& count_unit) {
  const bool sampled = count_unit == "samples";
  Json j;
  j["samples"] = table.samples;
  if (!sampled) j["unit"] = count_unit;
  j["self"] = Rows(table, /*by_self=*/true, sampled);
  j["total"] = Rows(table, /*by_self=*/false, sampled);
  return j;
}

// Copies metadata[key] (a member of FILE.json) to out[as] when present; numbers that are not
// integers are rounded like the shares.
void CopyMember(const nlohmann::json& from, const char* key, Json* out, const char* as) {
  if (!from.is_object()) return;
  const auto it = from.find(key);
  if (it == from.end()) return;
  if (it->is_number_float()) {
    (*out)[as] = Fixed(it->get<double>());
  } else {
    // nlohmann::json -> ordered_json through text: its keys stay sorted; bad UTF-8 gets U+FFFD.
    (*out)[as] = Json::parse(it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

Json Recording(const nlohmann::json& m) {
  Json j = Json::object();
  for (const char* key : {"event", "frequency_hz", "call_graph", "duration_seconds", "samples",
                          "lost", "throttled"}) {
    CopyMember(m, key, &j, key);
  }
  if (m.contains("symbolization")) {
    const nlohmann::json& s = m["symbolization"];
    CopyMember(s, "named_frame_share", &j, "named_frame_share");
    CopyMember(s, "addresses", &j, "symbolized_addresses");
    CopyMember(s, "named", &j, "named_addresses");
  }
  if (m.contains("unwind")) {
    CopyMember(m["unwind"], "frames", &j, "unwound_frames");
    CopyMember(m["unwind"], "ends", &j, "stack_ends");
  }
  CopyMember(m, "counters", &j, "counters");
  if (m.contains("off_cpu")) CopyMember(m["off_cpu"], "threads", &j, "threads");
  return j;
}

Json BlockingSites(const std::vector<BlockingCallSite>& sites, uint64_t total) {
  Json j;
  j["unit"] = "us";
  j["total"] = total;
  Json rows = Json::array();
  for (const BlockingCallSite& s : sites) {
    rows.push_back({{"name", s.name}, {"time", s.count}, {"share", Share(s.count, total)}});
  }
  j["sites"] = std::move(rows);
  return j;
}

Json Allocations(const nlohmann::json& m, const std::vector<AllocSiteRanking>& rankings) {
  Json j = Json::object();
  if (m.is_object() && m.contains("allocations")) CopyMember(m["allocations"], "exact", &j, "exact");
  Json all = Json::array();
  for (const AllocSiteRanking& r : rankings) {
    Json ranking;
    ranking["metric"] = r.metric;
    ranking["unit"] = r.unit;
    ranking["total"] = r.total;
    Json rows = Json::array();
    for (const AllocCallSite& s : r.sites) {
      rows.push_back({{"name", s.name}, {"value", s.value}, {"share", Share(s.value, r.total)}});
    }
    ranking["sites"] = std::move(rows);
    all.push_back(std::move(ranking));
  }
  j["call_sites"] = std::move(all);
  return j;
}

}  // namespace

std::string RenderReportJson(const ReportModel& model, const std::string& input,
                             const nlohmann::json& metadata, const ReportJsonSections& sections) {
  Json j;
  j["schema"] = "nativeprof-report/1";
  j["input"] = input;
  j["by"] = model.by == ReportKey::kModule ? "module" : "function";
  j["top"] = model.top_n;
  j["samples"] = {{"all", model.filtered.all_samples}, {"selected", model.filtered.samples}};
  j["filters"] = {{"focus", model.focus.empty() ? Json() : Json(model.focus)},
                  {"hide", model.hide.empty() ? Json() : Json(model.hide)}};
  j["functions"] = Table(model.functions, model.count_unit);
  if (model.modules.has_value()) j["modules"] = Table(*model.modules, model.count_unit);
  if (metadata.is_object()) j["recording"] = Recording(metadata);
  if (sections.blocking_sites != nullptr) {
    j["blocking_call_sites"] = BlockingSites(*sections.blocking_sites, sections.blocking_total);
  }
  if (sections.allocations) j["allocations"] = Allocations(metadata, sections.alloc_rankings);
  // The per-thread split the text report's "Threads" table shows (recorded with --off-cpu).
  if (const nlohmann::json* recorded = RecordedThreads(metadata); recorded != nullptr) {
    Json threads = Json::array();
    for (const nlohmann::json& t : *recorded) {
      Json row = Json::object();
      for (const char* key : {"name", "pid", "tid", "lifetime_ns", "on_cpu_ns", "blocked_ns",
                              "waiting_ns", "ran"}) {
        CopyMember(t, key, &row, key);
      }
      threads.push_back(std::move(row));
    }
    j["threads"] = std::move(threads);
  }
  return RenderJsonDocument(j) + "\n";
}

}  // namespace nativeprof::output
