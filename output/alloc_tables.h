// The allocation parts of `report` (record --alloc): the exact totals from the "allocations"
// section of FILE.json as heaptrack_print summarises a run, and the call sites of an allocation
// profile (bytes, allocations, temporary, at the peak, leaked) ranked by their figure. Text
// rendering; pure.
#ifndef NATIVEPROF_OUTPUT_ALLOC_TABLES_H_
#define NATIVEPROF_OUTPUT_ALLOC_TABLES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "output/frame_modules.h"
#include "output/table_format.h"
#include "symbolize/profile.h"

namespace nativeprof::output {

// "Allocations (exact counts ...)": calls and calls/s, bytes, temporary and their share, peak
// heap, peak RSS, leaked, and how the sites were sampled; "" without an allocations section. In
// markdown, a bold title over the same lines in a code block.
std::string RenderAllocSummary(const nlohmann::json& metadata,
                               TableFormat format = TableFormat::kText);

// "Allocations: before -> after": the exact totals of two recordings side by side (calls,
// bytes, temporary, peak heap, leaked), with each change; "" unless both have them.
std::string RenderAllocTotalsDiff(const nlohmann::json& before, const nlohmann::json& after);

struct AllocCallSite {
  std::string name;    // "caller (via allocator entry)", or the caller alone
  uint64_t value = 0;  // in the profile's count unit (bytes or allocations)
};

// The sites of an allocation profile, largest first (top `top_n`): for each stack, the innermost
// frame that is not allocator plumbing (malloc and friends, operator new, Rust's alloc:: and
// __rust_alloc, the containers' growth helpers, and with `frame_modules` every frame of the C
// and C++ runtime's libraries: printf's buffer, fopen's FILE), named with the outermost
// plumbing frame it called.
std::vector<AllocCallSite> TopAllocCallSites(const symbolize::Profile& profile, size_t top_n,
                                             const FrameModuleMap* frame_modules = nullptr);

// The heap profile's stacks as pprof shows them: each ends at its allocation site
// (TopAllocCallSites' rule, by the frames' modules), so `go tool pprof -top` puts flat cost on
// the program's calls, not on malloc or operator new; the plumbing frame the site called is the
// sample's "via" label. Stacks that become equal are merged (samples, weights, values added).
// A profile read from a folded file names its frames' modules by `frame_modules`.
symbolize::Profile AllocSiteStacks(const symbolize::Profile& profile,
                                   const FrameModuleMap* frame_modules = nullptr);

// "Call sites by METRIC: before -> after (UNIT)": the total, then the sites of either profile
// (TopAllocCallSites' names) whose value changed, largest change first (top `top_n`), each with
// both values and the change; a last line counts the changes not shown and the unchanged sites.
std::string RenderAllocSitesDiff(const std::string& metric, const std::string& unit,
                                 const symbolize::Profile& before,
                                 const FrameModuleMap* before_modules,
                                 const symbolize::Profile& after,
                                 const FrameModuleMap* after_modules, size_t top_n);

// "Top N call sites by TITLE" with each site's value and share of `total`; "" for no sites.
std::string RenderAllocCallSites(const std::string& title, const std::vector<AllocCallSite>& sites,
                                 uint64_t total, const std::string& unit,
                                 TableFormat format = TableFormat::kText);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_ALLOC_TABLES_H_
