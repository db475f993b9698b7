// `nativeprof report [FILE] [options]`: top functions (or modules) of a folded profile with
// confidence intervals, optionally focused on / hiding frames by regex, as text, JSON or
// markdown; an optional call tree and the counter summary from FILE.json when present. Main
// thread only. Options: tools/report_options.h; filtering and ranking: output/report_model.h;
// rendering: output/text_report.h, output/report_json.h, output/report_markdown.h.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "base/file_util.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "output/folded_reader.h"
#include "output/frame_modules.h"
#include "output/alloc_tables.h"
#include "output/off_cpu_tables.h"
#include "output/report_json.h"
#include "output/report_markdown.h"
#include "output/report_model.h"
#include "output/text_report.h"
#include "symbolize/profile_builder.h"
#include "tools/alloc_report.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"
#include "tools/input_profile.h"
#include "tools/record_options.h"
#include "tools/report_options.h"

namespace nativeprof::tools {
namespace {

// The heaptrack-style rankings of an allocation view `alloc`: of every view of the recording
// that is beside it (the reported one as filtered).
std::vector<output::AllocSiteRanking> AllocRankings(const ReportOptions& o,
                                                    const output::ReportModel& model,
                                                    const AllocView& alloc,
                                                    const output::FrameModuleMap& frame_modules) {
  std::vector<output::AllocSiteRanking> rankings;
  std::string main;
  RecordOptions::ViewOfPath(o.path, &main);
  for (const AllocView& v : AllocViews()) {
    const std::string path = RecordOptions::ViewPath(main, v.name);
    absl::StatusOr<symbolize::Profile> p =
        v.name == alloc.name ? absl::StatusOr<symbolize::Profile>(model.filtered.profile)
                             : output::ReadFoldedFile(path);
    if (!p.ok()) continue;  // that view was not written (or not kept)
    uint64_t total = 0;
    for (const symbolize::ProfileStack& s : p->stacks) total += s.samples;
    rankings.push_back({v.metric, symbolize::AllocViewUnit(v.view), total,
                        output::TopAllocCallSites(*p, o.top_n, &frame_modules)});
  }
  return rankings;
}

// Why there is no table of leaked call sites when the program leaked: none of its leaked blocks
// was sampled (a few small blocks, at one sample per 512 KiB). "" when there is a table, or no
// leak.
std::string UnsampledLeakLine(const ReportOptions& o,
                              const std::vector<output::AllocSiteRanking>& rankings,
                              const nlohmann::json& meta) {
  // A filter may leave the view empty, and a view not beside the report says nothing.
  if (o.focus.has_value() || o.hide.has_value()) return "";
  bool leaked_view = false;
  for (const output::AllocSiteRanking& r : rankings) {
    if (r.metric != "bytes leaked") continue;
    if (!r.sites.empty()) return "";
    leaked_view = true;
  }
  if (!leaked_view) return "";
  const nlohmann::json* exact = nullptr;
  if (meta.is_object() && meta.contains("allocations") && meta["allocations"].is_object() &&
      meta["allocations"].contains("exact") && meta["allocations"]["exact"].is_object()) {
    exact = &meta["allocations"]["exact"];
  }
  auto figure = [&](const char* key) -> uint64_t {
    return exact != nullptr && exact->contains(key) && (*exact)[key].is_number_unsigned()
               ? (*exact)[key].get<uint64_t>()
               : 0;
  };
  if (figure("leaked_bytes") == 0) return "";
  // Every allocation sampled: a leak there was sampled too.
  const nlohmann::json& alloc = meta["allocations"];
  if (alloc.contains("rate_bytes") && alloc["rate_bytes"].is_number_unsigned() &&
      alloc["rate_bytes"].get<uint64_t>() <= 1) {
    return "";
  }
  return absl::StrCat("No leaked block was sampled, so no leaked call site is shown (",
                      output::WithThousands(figure("leaked_bytes")), " B leaked in ",
                      output::Plural(figure("leaked_blocks"), "block", "blocks"),
                      ", exact); --alloc=1 samples every allocation\n");
}

std::string RenderText(const ReportOptions& o, const output::ReportModel& model,
                       const nlohmann::json& meta, const std::string& view,
                       const output::FrameModuleMap& frame_modules) {
  std::string text = output::RenderReportTables(model);
  if (view == kOffCpuView) {
    const std::string sites = output::RenderBlockingCallSites(
        output::TopBlockingCallSites(model.filtered.profile, o.top_n, &frame_modules),
        model.filtered.samples);
    if (!sites.empty()) absl::StrAppend(&text, "\n", sites);
  }
  if (const AllocView* alloc = FindAllocView(view); alloc != nullptr) {
    absl::StrAppend(&text, "\n", output::RenderAllocSummary(meta));
    const std::vector<output::AllocSiteRanking> rankings =
        AllocRankings(o, model, *alloc, frame_modules);
    for (const output::AllocSiteRanking& r : rankings) {
      const std::string sites = output::RenderAllocCallSites(r.metric, r.sites, r.total, r.unit);
      if (!sites.empty()) absl::StrAppend(&text, "\n", sites);
    }
    if (const std::string line = UnsampledLeakLine(o, rankings, meta); !line.empty()) {
      absl::StrAppend(&text, "\n", line);
    }
  }
  const std::string threads = output::RenderThreadSplit(meta);
  if (!threads.empty()) absl::StrAppend(&text, "\n", threads);
  if (o.tree) {
    text.push_back('\n');
    text += output::RenderCallTree(model.filtered.profile, o.depth, o.min_percent);
  }
  const std::string counters = output::RenderCounters(meta);
  if (!counters.empty()) {
    text.push_back('\n');
    text += counters;
  }
  return text;
}

}  // namespace

int RunReportCommand(int argc, char** argv) {
  absl::StatusOr<ReportOptions> o = ParseReportOptions(argc, argv);
  if (!o.ok()) return PrintCliError(CliStep::kParseOptions, o.status());
  std::optional<symbolize::Profile> profile =
      ReadInputProfile(o->path, "give a folded file ('comm;frame;...;frame COUNT' per line)");
  if (!profile.has_value()) return kExitBadInput;
  std::string view;  // "" for a CPU profile
  const nlohmann::json meta = ReadRecordMetadata(o->path, &view);
  if (absl::Status st = MarkRecordedView(o->path, view, &*profile); !st.ok()) {
    return PrintCliError(CliStep::kReadInput, st);
  }
  const output::FrameModuleMap frame_modules = output::ParseFrameModules(meta);
  output::ReportSpec spec;
  spec.top_n = o->top_n;
  spec.focus = o->focus.has_value() ? &*o->focus : nullptr;
  spec.hide = o->hide.has_value() ? &*o->hide : nullptr;
  spec.by = o->by;
  spec.frame_modules = &frame_modules;
  if (!view.empty()) spec.count_unit = profile->count_unit;
  const output::ReportModel model = output::BuildReport(*profile, spec);
  std::string text;
  switch (o->format) {
    case ReportFormat::kText:
      text = RenderText(*o, model, meta, view, frame_modules);
      break;
    case ReportFormat::kJson: {
      output::ReportJsonSections sections;
      std::vector<output::BlockingCallSite> blocking;
      if (view == kOffCpuView) {
        blocking = output::TopBlockingCallSites(model.filtered.profile, o->top_n, &frame_modules);
        sections.blocking_sites = &blocking;
        sections.blocking_total = model.filtered.samples;
      }
      if (const AllocView* alloc = FindAllocView(view); alloc != nullptr) {
        sections.allocations = true;
        sections.alloc_rankings = AllocRankings(*o, model, *alloc, frame_modules);
      }
      text = output::RenderReportJson(model, o->path, meta, sections);
      break;
    }
    case ReportFormat::kMarkdown: {
      text = output::RenderReportMarkdown(model, o->path, meta);
      using output::TableFormat;
      if (view == kOffCpuView) {
        const std::string sites = output::RenderBlockingCallSites(
            output::TopBlockingCallSites(model.filtered.profile, o->top_n, &frame_modules),
            model.filtered.samples, TableFormat::kMarkdown);
        if (!sites.empty()) absl::StrAppend(&text, "\n", sites);
      }
      if (const AllocView* alloc = FindAllocView(view); alloc != nullptr) {
        absl::StrAppend(&text, "\n", output::RenderAllocSummary(meta, TableFormat::kMarkdown));
        const std::vector<output::AllocSiteRanking> rankings =
            AllocRankings(*o, model, *alloc, frame_modules);
        for (const output::AllocSiteRanking& r : rankings) {
          const std::string sites = output::RenderAllocCallSites(r.metric, r.sites, r.total,
                                                                 r.unit, TableFormat::kMarkdown);
          if (!sites.empty()) absl::StrAppend(&text, "\n", sites);
        }
        if (const std::string line = UnsampledLeakLine(*o, rankings, meta); !line.empty()) {
          absl::StrAppend(&text, "\n", line);
        }
      }
      const std::string threads = output::RenderThreadSplit(meta, TableFormat::kMarkdown);
      if (!threads.empty()) absl::StrAppend(&text, "\n", threads);
      break;
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace nativeprof::tools
