#include "output/text_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "output/flame_tree.h"
#include "output/function_stats.h"
#include "output/report_model.h"

namespace nativeprof::output {

std::string Plural(uint64_t n, const char* one, const char* many) {
  return absl::StrCat(WithThousands(n), " ", n == 1 ? one : many);
}

std::string TopHeading(uint64_t n, absl::string_view one, absl::string_view many) {
  return n == 1 ? absl::StrCat("Top ", one) : absl::StrCat("Top ", WithThousands(n), " ", many);
}

std::string WithThousands(uint64_t value) {
  std::string digits = absl::StrCat(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

namespace {

// "100 samples", or with --focus "40 samples through /hotlib/, 40.00% of all".
std::string SampleScope(const ReportModel& model, uint64_t samples) {
  if (model.focus.empty()) return absl::StrCat(WithThousands(samples), " ", model.count_unit);
  return absl::StrFormat("%s %s through /%s/, %.2f%% of all", WithThousands(samples),
                         model.count_unit, model.focus,
                         Percent(samples, model.filtered.all_samples));
}

void AppendTable(std::string* out, const ReportModel& model, const RankedTable& table,
                 bool by_self, bool* any_noise) {
  const std::vector<FunctionCounts>& rows = by_self ? table.by_self : table.by_total;
  absl::StrAppendFormat(out, "%s by %s share (of %s)\n",
                        TopHeading(rows.size(), table.noun, absl::StrCat(table.noun, "s")),
                        by_self ? "self" : "total", SampleScope(model, table.samples));
  absl::StrAppendFormat(out, "%8s  %-17s %10s  %8s  %s\n", by_self ? "self" : "total",
                        "95% interval", model.count_unit, by_self ? "total" : "self", table.noun);
  // Time is measured, not sampled: an interval only applies to sample counts.
  const bool sampled = model.count_unit == "samples";
  for (const FunctionCounts& f : rows) {
    const uint64_t k = by_self ? f.self : f.total;
    const uint64_t other = by_self ? f.total : f.self;
    const Interval ci = WilsonInterval(k, table.samples, 0.95);
    const bool noise = sampled && IsNoise(k, table.samples);
    *any_noise |= noise;
    absl::StrAppendFormat(out, "%7.2f%%  %-17s %10s  %7.2f%%  %s%s\n", Percent(k, table.samples),
                          sampled ? absl::StrFormat("%.2f-%.2f%%", 100 * ci.low, 100 * ci.high)
                                  : std::string("-"),
                          WithThousands(k), Percent(other, table.samples), f.name,
                          noise ? "  [noise]" : "");
  }
}

}  // namespace

std::string RenderReportTables(const ReportModel& model) {
  std::string out;
  if (!model.hide.empty()) {
    absl::StrAppendFormat(&out,
                          "Hiding frames matching /%s/ (their self samples count for the nearest "
                          "visible caller)\n\n",
                          model.hide);
  }
  const RankedTable& table = model.modules.has_value() ? *model.modules : model.functions;
  if (table.samples == 0) {
    if (model.focus.empty()) return out + "no samples\n";
    return absl::StrCat(out, "no samples through /", model.focus, "/ (of ",
                        WithThousands(model.filtered.all_samples), ")\n");
  }
  bool any_noise = false;
  AppendTable(&out, model, table, /*by_self=*/true, &any_noise);
  out.push_back('\n');
  AppendTable(&out, model, table, /*by_self=*/false, &any_noise);
  if (any_noise) {
    out.append(
        "\n[noise]: too few samples to pin the share down - its 95% interval spans more than a "
        "factor of three,\n         so its rank among neighbours may be chance. Sample longer "
        "or at a higher frequency.\n");
  }
  return out;
}

std::string RenderTopFunctions(const symbolize::Profile& profile, size_t top_n) {
  ReportSpec spec;
  spec.top_n = top_n;
  return RenderReportTables(BuildReport(profile, spec));
}

namespace {

void AppendTreeNode(std::string* out, const FlameTree& tree, uint32_t id, int level,
                    int max_level, double min_percent, uint64_t total) {
  const FlameNode& n = tree.nodes()[id];
  absl::StrAppendFormat(out, "%7.2f%% %7.2f%%  %s%s\n", Percent(n.value[0], total),
                        Percent(n.self[0], total), std::string(2 * level, ' '),
                        tree.names()[n.name]);
  if (level >= max_level) {
    if (n.first_child != 0) {
      absl::StrAppendFormat(out, "%17s  %s...\n", "", std::string(2 * level + 2, ' '));
    }
    return;
  }
  std::vector<uint32_t> kids = tree.Children(id);  // by name; make it by value, stable
  std::stable_sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
    return tree.nodes()[a].value[0] > tree.nodes()[b].value[0];
  });
  size_t hidden = 0;
  uint64_t hidden_samples = 0;
  for (uint32_t c : kids) {
    if (Percent(tree.nodes()[c].value[0], total) < min_percent) {
      ++hidden;
      hidden_samples += tree.nodes()[c].value[0];
      continue;
    }
    AppendTreeNode(out, tree, c, level + 1, max_level, min_percent, total);
  }
  if (hidden > 0) {
    absl::StrAppendFormat(out, "%7.2f%% %8s  %s... %d more under %.2g%% each\n",
                          Percent(hidden_samples, total), "", std::string(2 * level + 2, ' '),
                          static_cast<int>(hidden), min_percent);
  }
}

}  // namespace

std::string RenderCallTree(const symbolize::Profile& profile, int depth, double min_percent) {
  const FlameTree tree = BuildFlameGraphTree(profile);
  const uint64_t total = tree.root().value[0];
  if (total == 0) return "no samples\n";
  // In the profile's own unit: samples, or us of a time view, bytes of an allocation view.
  std::string out = absl::StrFormat("Call tree (%s %s; total%%, self%%)\n", WithThousands(total),
                                    profile.count_unit);
  absl::StrAppendFormat(&out, "%8s %8s  %s\n", "total", "self", "thread / function");
  std::vector<uint32_t> threads = tree.Children(0);
  std::stable_sort(threads.begin(), threads.end(), [&](uint32_t a, uint32_t b) {
    return tree.nodes()[a].value[0] > tree.nodes()[b].value[0];
  });
  for (uint32_t t : threads) AppendTreeNode(&out, tree, t, 0, depth, min_percent, total);
  return out;
}

namespace {

std::string JsonScalar(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return WithThousands(v.get<int64_t>() < 0 ? 0 : v.get<uint64_t>());
  if (v.is_number()) return absl::StrFormat("%.6g", v.get<double>());
  // Not dumped: dump() recurses as deep as the file nests (a counter of a million '[' overflowed
  // the stack) and prints all of it.
  if (v.is_array()) return absl::StrCat("<array of ", v.size(), ">");
  if (v.is_object()) return absl::StrCat("<object of ", v.size(), " members>");
  return v.dump();  // true, false, null
}

void AppendCounter(std::string* out, const std::string& name, const nlohmann::json& v) {
  std::string value, unit;
  if (v.is_object()) {
    for (const char* key : {"value", "count", "mean"}) {
      if (v.contains(key)) {
        value = v[key].is_null() ? std::string("<not counted>") : JsonScalar(v[key]);
        break;
      }
    }
    if (v.contains("supported") && v["supported"].is_boolean() && !v["supported"].get<bool>()) {
      value = "<not supported>";
    }
    if (v.contains("unit") && v["unit"].is_string()) unit = v["unit"].get<std::string>();
    if (value.empty()) value = JsonScalar(v);
  } else {
    value = JsonScalar(v);
  }
  absl::StrAppendFormat(out, "  %-28s %18s %s\n", name, value, unit);
}

std::string NameOf(const nlohmann::json& c) {
  for (const char* key : {"name", "event"}) {
    if (c.is_object() && c.contains(key) && c[key].is_string()) return c[key].get<std::string>();
  }
  return "?";
}

}  // namespace

std::string RenderCounters(const nlohmann::json& metadata) {
  if (!metadata.is_object() || !metadata.contains("counters")) return "";
  const nlohmann::json* counters = &metadata["counters"];
  const nlohmann::json* metrics = nullptr;
  // `record` writes {"counters": {"elapsed_seconds": s, "counters": [...], "metrics": [...]}}.
  if (counters->is_object() && counters->contains("counters") &&
      (*counters)["counters"].is_array()) {
    if (counters->contains("metrics") && (*counters)["metrics"].is_array()) {
      metrics = &(*counters)["metrics"];
    }
    counters = &(*counters)["counters"];
  }
  std::string out = "Counters\n";
  if (counters->is_object()) {
    for (auto it = counters->begin(); it != counters->end(); ++it) {
      AppendCounter(&out, it.key(), it.value());
    }
  } else if (counters->is_array()) {
    for (const nlohmann::json& c : *counters) AppendCounter(&out, NameOf(c), c);
  } else {
    return "";
  }
  if (metrics != nullptr && !metrics->empty()) {
    out.append("Derived metrics\n");
    for (const nlohmann::json& m : *metrics) AppendCounter(&out, NameOf(m), m);
  }
  return out;
}

}  // namespace nativeprof::output
