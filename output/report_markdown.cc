#include "output/report_markdown.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "output/text_report.h"

namespace nativeprof::output {
namespace {

void AppendTable(std::string* out, const RankedTable& table, const std::string& unit, bool by_self,
                 bool* any_noise) {
  const bool sampled = unit == "samples";  // time profiles are measured: no interval
  const std::vector<FunctionCounts>& rows = by_self ? table.by_self : table.by_total;
  absl::StrAppendFormat(out, "**%s by %s share**\n\n",
                        TopHeading(rows.size(), table.noun, absl::StrCat(table.noun, "s")),
                        by_self ? "self" : "total");
  absl::StrAppendFormat(out, "| %s | 95%% interval | %s | %s | %s |\n",
                        by_self ? "self" : "total", unit, by_self ? "total" : "self", table.noun);
  out->append("|---:|---:|---:|---:|:---|\n");
  for (const FunctionCounts& f : rows) {
    const uint64_t k = by_self ? f.self : f.total;
    const uint64_t other = by_self ? f.total : f.self;
    const Interval ci = WilsonInterval(k, table.samples, 0.95);
    const bool noise = sampled && IsNoise(k, table.samples);
    *any_noise |= noise;
    absl::StrAppendFormat(out, "| %.2f%% | %s | %s | %.2f%% | %s%s |\n",
                          Percent(k, table.samples),
                          sampled ? absl::StrFormat("%.2f-%.2f%%", 100 * ci.low, 100 * ci.high)
                                  : std::string("-"),
                          WithThousands(k),
                          Percent(other, table.samples), MarkdownCode(f.name),
                          noise ? " [noise]" : "");
  }
}

std::string Summary(const ReportModel& model, const std::string& input,
                    const nlohmann::json& metadata) {
  std::string out = absl::StrCat("nativeprof report of ", MarkdownCode(input, /*in_table=*/false),
                                 ": ", WithThousands(model.filtered.samples), " ",
                                 model.count_unit);
  if (!model.focus.empty()) {
    absl::StrAppendFormat(&out, " through %s (%.2f%% of %s)",
                          MarkdownCode(model.focus, /*in_table=*/false),
                          Percent(model.filtered.samples, model.filtered.all_samples),
                          WithThousands(model.filtered.all_samples));
  }
  if (!model.hide.empty()) {
    absl::StrAppend(&out, ", frames matching ", MarkdownCode(model.hide, /*in_table=*/false),
                    " hidden (their self samples count for the caller)");
  }
  out.append(".");
  if (metadata.is_object() && metadata.contains("samples") &&
      metadata["samples"].is_number_unsigned()) {
    // --no-cpu: the recording took no CPU samples by design (event "none").
    if (metadata.contains("event") && metadata["event"] == "none") {
      out.append(" Recorded with --no-cpu (allocations only)");
    } else {
      absl::StrAppend(&out, " Recorded ", WithThousands(metadata["samples"].get<uint64_t>()),
                      " samples");
    }
    const nlohmann::json& lost = metadata.contains("lost") ? metadata["lost"] : nlohmann::json();
    if (lost.is_object() && lost.value("records", nlohmann::json()).is_number_unsigned() &&
        lost.value("samples", nlohmann::json()).is_number_unsigned()) {
      absl::StrAppend(
          &out, ", ",
          WithThousands(lost["records"].get<uint64_t>() + lost["samples"].get<uint64_t>()),
          " lost");
    }
    const nlohmann::json& symbols =
        metadata.contains("symbolization") ? metadata["symbolization"] : nlohmann::json();
    const nlohmann::json share =
        symbols.is_object() ? symbols.value("named_frame_share", nlohmann::json()) : nullptr;
    if (share.is_number()) {
      absl::StrAppendFormat(&out, ", %.2f%% of frames named", 100 * share.get<double>());
    }
    out.append(".");
  }
  return out + "\n";
}

}  // namespace

std::string MarkdownCode(absl::string_view text, bool in_table) {
  size_t longest = 0, run = 0;
  std::string body;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|' && in_table) {
      body.append("\\|");
    } else if (c == '\n' || c == '\r') {
      body.push_back(' ');  // a line break would end the table row
    } else {
      body.push_back(c);
    }
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  return absl::StrCat(fence, pad ? " " : "", body, pad ? " " : "", fence);
}

std::string RenderReportMarkdown(const ReportModel& model, const std::string& input,
                                 const nlohmann::json& metadata) {
  std::string out = Summary(model, input, metadata);
  const RankedTable& table = model.modules.has_value() ? *model.modules : model.functions;
  if (table.samples == 0) return out;
  bool any_noise = false;
  out.push_back('\n');
  AppendTable(&out, table, model.count_unit, /*by_self=*/true, &any_noise);
  out.push_back('\n');
  AppendTable(&out, table, model.count_unit, /*by_self=*/false, &any_noise);
  if (any_noise) {
    out.append(
        "\n[noise]: too few samples to pin the share down (its 95% interval spans more than a "
        "factor of three).\n");
  }
  return out;
}

}  // namespace nativeprof::output
