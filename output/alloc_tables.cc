#include "output/alloc_tables.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "output/folded_writer.h"
#include "output/library_frames.h"
#include "output/report_markdown.h"
#include "output/text_report.h"

namespace nativeprof::output {
namespace {

// The allocator's own entry points, and the checked wrappers C programs allocate through:
// libiberty's and gnulib's x*alloc (GCC, binutils, coreutils, git) and GLib's g_*alloc.
bool IsAllocatorEntry(const std::string& f) {
  static const char* const kExact[] = {
      "malloc", "calloc", "realloc", "reallocarray", "free", "operator new", "operator new[]",
      "__rust_alloc", "__rust_alloc_zeroed", "__rust_realloc", "__rdl_alloc",
      "__rdl_alloc_zeroed", "__rdl_realloc", "__rg_alloc", "__rg_realloc", "posix_memalign",
      "aligned_alloc", "memalign", "valloc", "pvalloc", "strdup", "strndup", "asprintf",
      "vasprintf", "__vasprintf_internal", "xmalloc", "xcalloc", "xrealloc", "xzalloc",
      "xnmalloc", "xnrealloc", "x2realloc", "x2nrealloc", "xcharalloc", "xmemdup", "xstrdup",
      "xstrndup", "ximalloc", "xirealloc", "xicalloc", "xizalloc", "xreallocarray",
      "xireallocarray", "g_malloc", "g_malloc0", "g_realloc", "g_malloc_n", "g_malloc0_n",
      "g_realloc_n", "g_try_malloc", "g_try_malloc0", "g_try_realloc", "g_strdup", "g_strndup",
      "g_memdup", "g_memdup2", "g_slice_alloc", "g_slice_alloc0"};
  for (const char* e : kExact) {
    if (f == e) return true;
  }
  // Rust's own allocation functions above __rust_alloc (`alloc::alloc::alloc`,
  // `exchange_malloc`, the Global allocator's methods): a stack of the standard library alone
  // (a thread's start) is named by the std frame that called them, not by them.
  if (absl::StartsWith(f, "alloc::alloc::") ||
      absl::StartsWith(f, "<alloc::alloc::Global as core::alloc::Allocator>::")) {
    return true;
  }
  // A #[global_allocator] of the program's that wraps the system one (counting, tracking).
  return absl::StrContains(f, " as core::alloc::global::GlobalAlloc>::");
}

// Frames besides the allocator's entries that only pass an allocation on: the site is their
// caller.
bool IsContainerPlumbing(const std::string& f) {
  // The standard library's containers and conversions (`std::vector<T>::_M_realloc_insert`,
  // `<alloc::raw_vec::RawVec<T>>::grow_one`, `<str>::to_lowercase`, `core::iter::...::collect`):
  // the site is the program's frame that called into it.
  if (IsStandardLibraryFunction(f)) return true;
  static const char* const kPrefixes[] = {"hashbrown::", "<hashbrown::"};
  for (const char* p : kPrefixes) {
    if (absl::StartsWith(f, p)) return true;
  }
  return false;
}

// "+12.5 %", "new" (from nothing), "" (nothing to nothing).
std::string Change(uint64_t before, uint64_t after) {
  if (before == 0) return after == 0 ? "" : "new";
  const double b = static_cast<double>(before);
  return absl::StrFormat("%+.1f %%", 100.0 * (static_cast<double>(after) - b) / b);
}

std::string FormatValue(uint64_t v, const std::string& unit) {
  return unit == "bytes" ? absl::StrCat(WithThousands(v), " B") : WithThousands(v);
}

}  // namespace

std::string RenderAllocSummary(const nlohmann::json& metadata, TableFormat format) {
  if (!metadata.is_object() || !metadata.contains("allocations")) return "";
  const nlohmann::json& a = metadata["allocations"];
  if (!a.contains("exact")) return "";
  const nlohmann::json& e = a["exact"];
  auto u = [&e](const char* k) { return e.contains(k) ? e[k].get<uint64_t>() : uint64_t{0}; };
  const uint64_t calls = u("allocation_calls");
  const uint64_t temporary = u("temporary_allocations");
  std::string out = "Allocations (exact counts of every call)\n";
  absl::StrAppendFormat(&out, "  calls to allocation functions  %s (%s/s)\n", WithThousands(calls),
                        WithThousands(static_cast<uint64_t>(
                            e.contains("calls_per_second") ? e["calls_per_second"].get<double>()
                                                           : 0.0)));
  absl::StrAppendFormat(&out, "  bytes allocated                %s B\n",
                        WithThousands(u("allocated_bytes")));
  if (const uint64_t inherited = u("inherited_free_calls"); inherited != 0) {
    // Counted where each block was allocated, not again by the forked child that freed its copy.
    absl::StrAppendFormat(&out, "  frees of inherited copies      %s (%s B; forked children's, "
                          "not in the totals)\n",
                          WithThousands(inherited), WithThousands(u("inherited_freed_bytes")));
  }
  absl::StrAppendFormat(&out, "  temporary allocations          %s (%.1f %% of calls)\n",
                        WithThousands(temporary),
                        calls == 0 ? 0.0 : 100.0 * static_cast<double>(temporary) /
                                               static_cast<double>(calls));
  absl::StrAppendFormat(&out, "  peak heap                      %s B\n",
                        WithThousands(u("peak_heap_bytes")));
  if (a.contains("peak_rss_bytes")) {
    absl::StrAppendFormat(&out, "  peak RSS (largest process)     %s B\n",
                          WithThousands(a["peak_rss_bytes"].get<uint64_t>()));
  }
  const auto known = e.find("leak_known");
  if (known != e.end() && known->is_boolean() && !known->get<bool>()) {
    out += "  leaked at exit                 unknown (forked processes freed their copies of "
           "their parents' blocks)\n";
  } else {
    absl::StrAppendFormat(&out, "  leaked at exit                 %s B in %s\n",
                          WithThousands(u("leaked_bytes")),
                          Plural(u("leaked_blocks"), "block", "blocks"));
  }
  if (a.contains("rate_bytes") && a.contains("sampling")) {
    const uint64_t rate = a["rate_bytes"].get<uint64_t>();
    const uint64_t sampled = a["sampling"].value("sampled_allocations", uint64_t{0});
    absl::StrAppend(&out, "  call sites                     ",
                    rate <= 1 ? absl::StrCat("every allocation sampled (exact per site)")
                              : absl::StrCat(WithThousands(sampled),
                                             " allocations sampled, one per ", WithThousands(rate),
                                             " B on average (estimates)"),
                    "\n");
  }
  if (format == TableFormat::kMarkdown) {
    // The title bold, the aligned figures as they are in a code block.
    const size_t title_end = out.find('\n');
    return absl::StrCat("**", out.substr(0, title_end), "**\n\n```\n", out.substr(title_end + 1),
                        "```\n");
  }
  return out;
}

std::string RenderAllocTotalsDiff(const nlohmann::json& before, const nlohmann::json& after) {
  auto exact = [](const nlohmann::json& m) -> const nlohmann::json* {
    if (!m.is_object() || !m.contains("allocations") || !m["allocations"].contains("exact")) {
      return nullptr;
    }
    return &m["allocations"]["exact"];
  };
  const nlohmann::json* b = exact(before);
  const nlohmann::json* a = exact(after);
  if (b == nullptr || a == nullptr) return "";
  std::string out = "Allocations (exact): before -> after\n";
  const std::pair<const char*, const char*> rows[] = {
      {"allocation_calls", "calls to allocation functions"},
      {"allocated_bytes", "bytes allocated"},
      {"temporary_allocations", "temporary allocations"},
      {"peak_heap_bytes", "peak heap bytes"},
      {"leaked_bytes", "bytes leaked"},
      {"leaked_blocks", "blocks leaked"},
  };
  for (const auto& [key, label] : rows) {
    const uint64_t x = b->value(key, uint64_t{0});
    const uint64_t y = a->value(key, uint64_t{0});
    absl::StrAppendFormat(&out, "  %-30s %15s -> %-15s %s\n", label, WithThousands(x),
                          WithThousands(y), Change(x, y));
  }
  return out;
}

namespace {

// Per frame of a profile: whether its name says it only passes an allocation on, and whether it
// is in the C or C++ runtime's libraries (by its module, or, for a profile read from a folded
// file, which keeps names only, by `frame_modules`).
struct FrameRoles {
  std::vector<bool> named_plumbing;
  std::vector<bool> entry;  // IsAllocatorEntry
  std::vector<bool> runtime;
};

FrameRoles ClassifyFrames(const symbolize::Profile& profile, const FrameModuleMap* frame_modules) {
  FrameRoles roles;
  roles.named_plumbing.resize(profile.frames.size());
  roles.entry.resize(profile.frames.size());
  roles.runtime.resize(profile.frames.size());
  for (size_t f = 0; f < profile.frames.size(); ++f) {
    const symbolize::ProfileFrame& frame = profile.frames[f];
    roles.entry[f] = IsAllocatorEntry(frame.function);
    roles.named_plumbing[f] = roles.entry[f] || IsContainerPlumbing(frame.function);
    if (!frame.module.empty()) {
      roles.runtime[f] = IsRuntimeLibraryModule(BaseNameOf(frame.module));
    } else if (frame_modules != nullptr) {
      auto it = frame_modules->find(FoldedFrameName(frame));
      roles.runtime[f] = it != frame_modules->end() && IsRuntimeLibraryModule(it->second);
    }
  }
  return roles;
}

// Where a stack's allocation site is: its frames [0, keep) end at the site, and `via` is the
// outermost plumbing frame the site called ("" when the leaf is the site).
struct SiteCut {
  size_t keep = 0;
  std::string via;
};

SiteCut CutAtSite(const symbolize::Profile& profile, const FrameRoles& roles,
                  const symbolize::ProfileStack& s) {
  // Frames are root first: walk from the leaf up to the first one that is not plumbing. A stack
  // of the standard library's and the runtime's frames alone (a Rust thread's start, setting up
  // its guard page through pthread_getattr_np) is cut at the standard library's frame; one that
  // is the runtime's alone (a library's constructor, run by the loader) by its names only, else
  // its site would be the loader's entry point; a stack of plumbing alone is named by its
  // outermost frame.
  enum class Skip { kPlumbingAndRuntime, kEntriesAndRuntime, kPlumbing };
  SiteCut cut;
  for (const Skip skip : {Skip::kPlumbingAndRuntime, Skip::kEntriesAndRuntime, Skip::kPlumbing}) {
    auto skipped = [&](uint32_t f) {
      switch (skip) {
        case Skip::kPlumbingAndRuntime:
          return roles.named_plumbing[f] || roles.runtime[f];
        case Skip::kEntriesAndRuntime:
          return roles.entry[f] || roles.runtime[f];
        case Skip::kPlumbing:
          return static_cast<bool>(roles.named_plumbing[f]);
      }
      return false;
    };
    size_t i = s.frames.size();
    cut.via.clear();
    while (i > 0 && skipped(s.frames[i - 1])) {
      cut.via = profile.frames[s.frames[i - 1]].function;
      --i;
    }
    cut.keep = i;
    if (i > 0) return cut;
  }
  cut.keep = s.frames.empty() ? 0 : 1;
  cut.via.clear();
  return cut;
}

std::string SiteName(const symbolize::Profile& profile, const symbolize::ProfileStack& s,
                     const SiteCut& cut) {
  if (cut.keep == 0) return "";
  std::string name = profile.frames[s.frames[cut.keep - 1]].function;
  if (!cut.via.empty()) absl::StrAppend(&name, " (via ", cut.via, ")");
  return name;
}

}  // namespace

std::vector<AllocCallSite> TopAllocCallSites(const symbolize::Profile& profile, size_t top_n,
                                             const FrameModuleMap* frame_modules) {
  const FrameRoles roles = ClassifyFrames(profile, frame_modules);
  absl::flat_hash_map<std::string, uint64_t> by_site;
  for (const symbolize::ProfileStack& s : profile.stacks) {
    if (s.frames.empty() || s.samples == 0) continue;
    by_site[SiteName(profile, s, CutAtSite(profile, roles, s))] += s.samples;
  }
  std::vector<AllocCallSite> sites;
  for (auto& [name, value] : by_site) sites.push_back({name, value});
  std::sort(sites.begin(), sites.end(), [](const AllocCallSite& a, const AllocCallSite& b) {
    return a.value != b.value ? a.value > b.value : a.name < b.name;
  });
  if (sites.size() > top_n) sites.resize(top_n);
  return sites;
}

symbolize::Profile AllocSiteStacks(const symbolize::Profile& profile,
                                   const FrameModuleMap* frame_modules) {
  const FrameRoles roles = ClassifyFrames(profile, frame_modules);
  symbolize::Profile out = profile;
  out.stacks.clear();
  // Stacks that differ only below their site are one sample.
  absl::flat_hash_map<std::tuple<int32_t, int32_t, std::string, std::vector<uint32_t>,
                                 std::string>,
                      size_t>
      index;
  for (const symbolize::ProfileStack& s : profile.stacks) {
    const SiteCut cut = CutAtSite(profile, roles, s);
    std::vector<uint32_t> frames(s.frames.begin(), s.frames.begin() + cut.keep);
    auto [it, inserted] = index.try_emplace(
        std::tuple(s.pid, s.tid, s.thread_name, frames, cut.via), out.stacks.size());
    if (inserted) {
      symbolize::ProfileStack& t = out.stacks.emplace_back();
      t.thread_name = s.thread_name;
      t.pid = s.pid;
      t.tid = s.tid;
      t.frames = std::move(frames);
      t.off_cpu = s.off_cpu;
      t.labels = s.labels;
      if (!cut.via.empty()) t.labels.emplace_back("via", cut.via);
    }
    symbolize::ProfileStack& t = out.stacks[it->second];
    t.samples += s.samples;
    t.weight += s.weight;
    if (t.values.size() < s.values.size()) t.values.resize(s.values.size());
    for (size_t k = 0; k < s.values.size(); ++k) t.values[k] += s.values[k];
  }
  return out;
}

std::string RenderAllocSitesDiff(const std::string& metric, const std::string& unit,
                                 const symbolize::Profile& before,
                                 const FrameModuleMap* before_modules,
                                 const symbolize::Profile& after,
                                 const FrameModuleMap* after_modules, size_t top_n) {
  struct Row {
    std::string name;
    uint64_t before = 0, after = 0;
    uint64_t change() const { return before > after ? before - after : after - before; }
  };
  absl::flat_hash_map<std::string, Row> rows;
  uint64_t total_before = 0, total_after = 0;
  for (const AllocCallSite& s : TopAllocCallSites(before, SIZE_MAX, before_modules)) {
    rows[s.name].before = s.value;
    total_before += s.value;
  }
  for (const AllocCallSite& s : TopAllocCallSites(after, SIZE_MAX, after_modules)) {
    rows[s.name].after = s.value;
    total_after += s.value;
  }
  std::vector<Row> sorted;
  for (auto& [name, row] : rows) {
    if (row.before == row.after) continue;
    row.name = name;
    sorted.push_back(std::move(row));
  }
  std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) {
    return a.change() != b.change() ? a.change() > b.change() : a.name < b.name;
  });
  const size_t unchanged = rows.size() - sorted.size();
  const size_t not_shown = sorted.size() > top_n ? sorted.size() - top_n : 0;
  if (not_shown > 0) sorted.resize(top_n);
  std::string out = absl::StrCat("Call sites by ", metric, ": before -> after (", unit, ")\n");
  absl::StrAppendFormat(&out, "  %15s -> %-15s %10s  %s\n", WithThousands(total_before),
                        WithThousands(total_after), Change(total_before, total_after),
                        "all sites");
  for (const Row& r : sorted) {
    absl::StrAppendFormat(&out, "  %15s -> %-15s %10s  %s\n", WithThousands(r.before),
                          WithThousands(r.after), Change(r.before, r.after), r.name);
  }
  if (not_shown > 0 || unchanged > 0) {
    absl::StrAppend(&out, "  (");
    if (not_shown > 0) {
      absl::StrAppend(&out, Plural(not_shown, "smaller change", "smaller changes"),
                      " not shown (-n)");
    }
    if (not_shown > 0 && unchanged > 0) absl::StrAppend(&out, "; ");
    if (unchanged > 0) absl::StrAppend(&out, Plural(unchanged, "site", "sites"), " unchanged");
    absl::StrAppend(&out, ")\n");
  }
  return out;
}

std::string RenderAllocCallSites(const std::string& title, const std::vector<AllocCallSite>& sites,
                                 uint64_t total, const std::string& unit, TableFormat format) {
  if (sites.empty()) return "";
  const bool md = format == TableFormat::kMarkdown;
  const std::string heading =
      absl::StrCat(TopHeading(sites.size(), "call site", "call sites"), " by ", title);
  std::string out = md ? absl::StrCat("**", heading, "**\n\n| share | ", unit,
                                      " | call site |\n|---:|---:|:---|\n")
                       : absl::StrCat(heading, "\n");
  for (const AllocCallSite& s : sites) {
    const double share =
        total == 0 ? 0.0 : 100.0 * static_cast<double>(s.value) / static_cast<double>(total);
    if (md) {
      absl::StrAppendFormat(&out, "| %.2f%% | %s | %s |\n", share, FormatValue(s.value, unit),
                            MarkdownCode(s.name));
    } else {
      absl::StrAppendFormat(&out, "  %7.2f%%  %20s  %s\n", share, FormatValue(s.value, unit),
                            s.name);
    }
  }
  return out;
}

}  // namespace nativeprof::output
