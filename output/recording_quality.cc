#include "output/recording_quality.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/text_escape.h"
#include "output/text_report.h"
#include "symbolize/go_runtime.h"
#include "unwind/dwarf_stack_size.h"

namespace nativeprof::output {
namespace {

// The --call-graph dwarf copy to suggest when `bytes` truncated stacks: twice as much, and no
// less than the default (a tiny copy doubled truncates as surely), up to what the kernel copies.
// (--off-cpu-stack's small copies are a chosen trade of depth for speed: that advice doubles.)
uint32_t LargerStackCopy(uint32_t bytes) {
  return std::min(std::max(bytes * 2, unwind::kDefaultDwarfStackSize), unwind::kMaxDwarfStackSize);
}

// Whether `s` was sampled inside execve: its [unknown] user frames then have nothing to be named
// from and no caller to reach (symbolize::UnmappedContext::kInsideExecve), which is no fault of
// the symbols or of the unwinding.
bool InsideExecve(const symbolize::Profile& profile, const symbolize::ProfileStack& s) {
  return absl::c_any_of(s.frames, [&](uint32_t f) {
    const symbolize::ProfileFrame& frame = profile.frames[f];
    return frame.kind == symbolize::ProfileFrameKind::kKernel &&
           symbolize::IsExecveFunction(frame.function);
  });
}

bool IsUnknownUserFrame(const symbolize::ProfileFrame& frame) {
  return frame.kind == symbolize::ProfileFrameKind::kUser && frame.function == "[unknown]";
}

// A stack whose user part is the [unknown] left by execve (InsideExecveSamples' stacks).
bool UserPartLostToExecve(const symbolize::Profile& profile, const symbolize::ProfileStack& s) {
  return !s.frames.empty() && IsUnknownUserFrame(profile.frames[s.frames.front()]) &&
         InsideExecve(profile, s);
}

}  // namespace

double NamedFrameShare(const symbolize::Profile& profile) {
  uint64_t total = 0, named = 0;
  std::vector<bool> frame_named(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const std::string& f = profile.frames[i].function;
    frame_named[i] = !f.empty() && f[0] != '[' && f.find("+0x") == std::string::npos;
  }
  for (const symbolize::ProfileStack& s : profile.stacks) {
    const bool inside_execve = InsideExecve(profile, s);
    for (uint32_t f : s.frames) {
      if (inside_execve && IsUnknownUserFrame(profile.frames[f])) continue;
      total += s.samples;
      if (frame_named[f]) named += s.samples;
    }
  }
  return total == 0 ? 1.0 : static_cast<double>(named) / static_cast<double>(total);
}

bool OutermostFrameIsRoot(const std::string& function) {
  // glibc's and musl's process entry and thread start, the dynamic loader's own entry, and Go's.
  static constexpr absl::string_view kRoots[] = {
      "_start",        "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl",
      "_start_c",      "_dl_start",         "_dl_start_user",         "start_thread",
      "clone",         "clone3",            "__clone",                "__clone3",
      "thread_start",  "runtime.goexit",    "runtime.rt0_go",         "runtime.mstart"};
  const absl::string_view name = symbolize::WithoutGoAbiSuffix(function);
  for (absl::string_view root : kRoots) {
    if (name == root) return true;
  }
  // A Go stack on the scheduler stack starts where the goroutine switched to it.
  if (symbolize::IsGoStackSwitch(function)) return true;
  // Rust's std::thread entry (std::sys::unix::thread::Thread::new::thread_start and kin).
  return absl::EndsWith(function, "::thread_start");
}

uint64_t RootlessSamples(const symbolize::Profile& profile) {
  uint64_t rootless = 0;
  for (const symbolize::ProfileStack& s : profile.stacks) {
    if (s.off_cpu || s.frames.empty()) continue;
    const symbolize::ProfileFrame& outermost = profile.frames[s.frames.front()];
    if (outermost.kind == symbolize::ProfileFrameKind::kKernel) continue;  // no user part
    if (UserPartLostToExecve(profile, s)) continue;
    if (!OutermostFrameIsRoot(outermost.function)) rootless += s.samples;
  }
  return rootless;
}

uint64_t InsideExecveSamples(const symbolize::Profile& profile) {
  uint64_t samples = 0;
  for (const symbolize::ProfileStack& s : profile.stacks) {
    if (!s.off_cpu && UserPartLostToExecve(profile, s)) samples += s.samples;
  }
  return samples;
}

RecordingQuality CollectRecordingQuality(const sampler::SessionStats& session,
                                         const unwind::StackCollector& collector,
                                         const symbolize::SymbolizationStats& symbols,
                                         const symbolize::Profile& profile) {
  RecordingQuality q;
  q.ring_records = session.records;
  q.ring_bytes = session.bytes;
  q.corrupt_batches = session.corrupt_batches;
  q.parse_errors = session.parse_errors;
  q.undecodable_alloc_stacks = session.undecodable_alloc_stacks;
  q.peak_held_bytes = session.peak_held_bytes;
  const unwind::CollectorStats& c = collector.stats();
  q.lost_records = c.lost_records;
  q.lost_samples = c.lost_samples;
  q.throttled = c.throttled;
  q.samples = c.samples;
  q.frames = c.frames;
  q.kernel_frames = c.kernel_frames;
  q.unmapped_frames = c.unmapped_frames;
  q.spliced = c.spliced;
  q.ends = c.ends;
  q.truncated_switch = c.truncated_switch;
  q.switch_spliced = c.switch_spliced;
  q.truncated_short_copy = c.truncated_short_copy;
  const unwind::UnwinderStats u = collector.unwinder_stats();
  q.fp_fallback_frames = u.fp_fallback_frames;
  q.expr_frames = u.expr_frames;
  q.replayed_stacks = u.replayed_stacks;
  q.symbols = symbols;
  q.named_frame_share = NamedFrameShare(profile);
  q.rootless_samples = RootlessSamples(profile);
  q.execve_samples = InsideExecveSamples(profile);
  return q;
}

void AddRecordingQualityJson(const RecordingQuality& q, nlohmann::json* metadata) {
  nlohmann::json& j = *metadata;
  nlohmann::json& ring = j["ring"];
  ring["records"] = q.ring_records;
  ring["bytes"] = q.ring_bytes;
  ring["corrupt_batches"] = q.corrupt_batches;
  ring["parse_errors"] = q.parse_errors;
  ring["undecodable_alloc_stacks"] = q.undecodable_alloc_stacks;
  ring["peak_held_bytes"] = q.peak_held_bytes;
  j["lost"] = {{"records", q.lost_records}, {"samples", q.lost_samples}};
  j["throttled"] = q.throttled;
  nlohmann::json ends = nlohmann::json::object();
  for (int e = 0; e < unwind::kStackEndCount; ++e) {
    ends[unwind::StackEndName(static_cast<unwind::StackEnd>(e))] = q.ends[e];
  }
  j["unwind"] = {{"frames", q.frames},
                 {"kernel_frames", q.kernel_frames},
                 {"unmapped_frames", q.unmapped_frames},
                 {"spliced", q.spliced},
                 {"truncated_switch_stacks", q.truncated_switch},
                 {"spliced_switch_stacks", q.switch_spliced},
                 {"truncated_short_copies", q.truncated_short_copy},
                 {"fp_fallback_frames", q.fp_fallback_frames},
                 {"expr_frames", q.expr_frames},
                 {"replayed_stacks", q.replayed_stacks},
                 {"rootless_samples", q.rootless_samples},
                 {"execve_samples", q.execve_samples},
                 {"ends", ends}};
  nlohmann::json worst = nlohmann::json::array();
  for (const auto& m : q.symbols.worst_modules) {
    worst.push_back(
        {{"module", m.module}, {"unnamed", m.unnamed}, {"reason", m.reason}, {"advice", m.advice}});
  }
  j["symbolization"] = {{"addresses", q.symbols.addresses},
                        {"named", q.symbols.named},
                        {"named_frame_share", q.named_frame_share},
                        {"worst_modules", worst},
                        {"warnings", q.symbols.warnings}};
}

std::vector<std::string> RecordingQualityLines(const RecordingQuality& q,
                                               const QualityContext& context) {
  std::vector<std::string> lines;
  if (q.lost_records + q.lost_samples > 0) lines.push_back(context.lost_line);
  if (q.corrupt_batches > 0) {
    lines.push_back(absl::StrCat(Plural(q.corrupt_batches, "ring batch", "ring batches"),
                                 " skipped at an impossible record header, and the records in "
                                 "them lost; please report it with your kernel version"));
  }
  if (q.parse_errors > 0) {
    lines.push_back(absl::StrCat(Plural(q.parse_errors, "record", "records"),
                                 " shorter than their fields skipped; please report it with "
                                 "your kernel version"));
  }
  if (q.undecodable_alloc_stacks > 0) {
    lines.push_back(absl::StrCat(Plural(q.undecodable_alloc_stacks, "sampled allocation",
                                        "sampled allocations"),
                                 " without a stack (sent as a change to a stack copy the profiler "
                                 "did not have); please report it"));
  }
  if (q.throttled > 0) {
    lines.push_back(absl::StrCat("the kernel throttled sampling ",
                                 Plural(q.throttled, "time", "times"),
                                 " (perf_event_max_sample_rate): fewer samples than -F asks "
                                 "for; lower -F"));
  }
  const uint64_t all_truncated = q.ends[static_cast<size_t>(unwind::StackEnd::kTruncatedStack)];
  // Switch samples cut at their own copy are told apart, and are complete once the kernel's
  // chain finished them.
  const uint64_t special = q.truncated_switch + q.switch_spliced + q.truncated_short_copy;
  const uint64_t truncated = all_truncated > special ? all_truncated - special : 0;
  const uint64_t spliced = q.spliced > q.switch_spliced ? q.spliced - q.switch_spliced : 0;
  if (q.truncated_short_copy > 0) {
    lines.push_back(absl::StrCat(
        Plural(q.truncated_short_copy, "stack", "stacks"),
        " ended where the kernel's copy of the stack did, short of the ", context.dwarf_stack_bytes,
        " bytes asked for: it copies only stack pages in memory, and a large frame's untouched "
        "pages stop it; frame pointers reach past them (--call-graph fp, built with "
        "-fno-omit-frame-pointer)"));
  }
  if (q.truncated_switch > 0) {
    const uint32_t copy = context.switch_stack_bytes;
    const std::string stacks = Plural(q.truncated_switch, "off-CPU stack", "off-CPU stacks");
    if (copy == 0) {
      lines.push_back(absl::StrCat(
          stacks, " taken without a stack copy (--off-cpu-stack 0) end where the kernel's "
                  "frame-pointer walk does, at the first function built without frame pointers "
                  "(glibc's too): for whole stacks leave --off-cpu-stack out, or give it a size"));
    } else {
      lines.push_back(absl::StrCat(
          stacks, " truncated at the switch samples' ", copy, "-byte copy",
          copy < unwind::kMaxDwarfStackSize
              ? absl::StrCat(" - try --off-cpu-stack ",
                             std::min(copy * 2, unwind::kMaxDwarfStackSize))
              : ", the most the kernel copies; deeper stacks need frame pointers"));
    }
  }
  if (truncated > 0) {
    lines.push_back(absl::StrCat(
        Plural(truncated, "stack", "stacks"), " truncated at ", context.dwarf_stack_bytes,
        " bytes", spliced ? absl::StrCat(" (", spliced, " completed by the kernel chain)") : "",
        context.dwarf_stack_bytes < unwind::kMaxDwarfStackSize
            ? absl::StrCat(" - try --call-graph dwarf,", LargerStackCopy(context.dwarf_stack_bytes))
            : absl::StrCat(" - the most the kernel copies; deeper stacks, or ones on an "
                           "alternate signal stack, need frame pointers (--call-graph fp)")));
  }
  const uint64_t max_depth = q.ends[static_cast<size_t>(unwind::StackEnd::kMaxDepth)];
  if (max_depth > 0) {
    lines.push_back(absl::StrCat(Plural(max_depth, "stack", "stacks"),
                                 " hit the depth limit of ", context.depth_limit));
  }
  // The kernel's frame-pointer walk ends where a frame pointer is not one, so a chain broken by
  // code built without frame pointers looks finished: only its outermost frame tells.
  if (!context.dwarf && q.samples > 0 && q.rootless_samples * 100 >= q.samples) {
    lines.push_back(absl::StrFormat(
        "%d of %d samples (%.1f%%) have frame-pointer chains that stop before any program or "
        "thread entry (code built without frame pointers), so their callers are missing; record "
        "with --call-graph dwarf or build with -fno-omit-frame-pointer",
        q.rootless_samples, q.samples,
        100.0 * static_cast<double>(q.rootless_samples) / static_cast<double>(q.samples)));
  }
  if (context.dwarf) {
    for (int e = 0; e < unwind::kStackEndCount; ++e) {
      auto end = static_cast<unwind::StackEnd>(e);
      uint64_t ended = q.ends[e];
      // A sample taken inside execve ends at its user address, in no module since the old image
      // was unmapped: nothing above it is missing.
      if (end == unwind::StackEnd::kNoModule) ended -= std::min(ended, q.execve_samples);
      if (end == unwind::StackEnd::kComplete || end == unwind::StackEnd::kTruncatedStack ||
          end == unwind::StackEnd::kMaxDepth || ended == 0) {
        continue;
      }
      lines.push_back(absl::StrCat(Plural(ended, "stack", "stacks"), " ended early: ",
                                   unwind::StackEndName(end)));
    }
    // A few frames without CFI are normal (hand-written entry code); many mean a module built
    // without unwind tables, whose callers the frame-pointer guess may get wrong.
    if (q.fp_fallback_frames * 100 > q.frames) {
      lines.push_back(absl::StrFormat(
          "%s (%.1f%%) found with frame pointers for lack of CFI: callers above them may "
          "be wrong; build with -fasynchronous-unwind-tables or install the debug info",
          Plural(q.fp_fallback_frames, "frame", "frames"),
          100.0 * static_cast<double>(q.fp_fallback_frames) / static_cast<double>(q.frames)));
    }
  }
  const symbolize::SymbolizationStats& symbols = q.symbols;
  using ModuleMiss = symbolize::SymbolizationStats::ModuleMiss;
  auto miss_line = [](absl::string_view indent, const ModuleMiss& m) {
    // The module's path is the kernel's copy of a file name: any bytes but '/' and NUL.
    return absl::StrCat(indent, EscapeForMessage(m.module, kMaxQuotedPathBytes), ": ", m.unnamed,
                        " unnamed (", m.reason, ")",
                        m.advice.empty() ? "" : absl::StrCat("; ", m.advice));
  };
  if (symbols.addresses > 0 && symbols.named < symbols.addresses) {
    lines.push_back(absl::StrFormat("%.1f%% of sampled frames named (%d of %d distinct addresses)",
                                    100.0 * q.named_frame_share, symbols.named, symbols.addresses));
    int shown = 0;
    for (const auto& miss : symbols.worst_modules) {
      if (!miss.fixable) continue;
      if (shown++ == 3) break;
      lines.push_back(miss_line("  ", miss));
    }
  }
  // Left out of the share above, but said: they explain the profile's [unknown] frames.
  for (const auto& miss : symbols.worst_modules) {
    if (!miss.fixable) lines.push_back(miss_line("", miss));
  }
  for (const std::string& w : symbols.warnings) lines.push_back(w);
  return lines;
}

}  // namespace nativeprof::output
