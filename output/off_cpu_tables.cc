#include "output/off_cpu_tables.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "output/folded_writer.h"
#include "output/function_stats.h"
#include "output/library_frames.h"
#include "output/report_markdown.h"
#include "output/text_report.h"
#include "symbolize/profile_builder.h"

namespace nativeprof::output {
namespace {

double Ms(const nlohmann::json& v) { return v.is_number() ? v.get<double>() * 1e-6 : 0.0; }

}  // namespace

const nlohmann::json* RecordedThreads(const nlohmann::json& metadata) {
  if (!metadata.is_object() || !metadata.contains("off_cpu") ||
      !metadata["off_cpu"].is_object() || !metadata["off_cpu"].contains("threads") ||
      !metadata["off_cpu"]["threads"].is_array()) {
    return nullptr;
  }
  return &metadata["off_cpu"]["threads"];
}

std::string RenderThreadSplit(const nlohmann::json& metadata, TableFormat format) {
  const nlohmann::json* recorded = RecordedThreads(metadata);
  if (recorded == nullptr) return "";
  const bool md = format == TableFormat::kMarkdown;
  const nlohmann::json& threads = *recorded;
  std::string out = md ? "**Threads** (time in ms; share of each thread's lifetime while "
                         "recording)\n\n| thread | tid | lifetime | on-CPU | blocked | waiting for "
                         "CPU |\n|:---|---:|---:|---:|---:|---:|\n"
                       : "Threads (time in ms; share of each thread's lifetime while recording)\n";
  if (!md) {
    absl::StrAppendFormat(&out, "%-20s %8s %10s %16s %16s %16s\n", "thread", "tid", "lifetime",
                          "on-CPU", "blocked", "waiting for CPU");
  }
  // A server's hundreds of threads, or a run of thousands of short ones, would bury the rest of
  // the report: the longest-lived kThreadRows, in the order the metadata lists them (all of
  // them are in the metadata and the JSON report).
  std::vector<const nlohmann::json*> rows;
  for (const nlohmann::json& t : threads) {
    if (t.is_object()) rows.push_back(&t);
  }
  const size_t listed = rows.size();
  if (rows.size() > kThreadRows) {
    std::vector<const nlohmann::json*> longest = rows;
    std::stable_sort(longest.begin(), longest.end(), [](const nlohmann::json* a,
                                                        const nlohmann::json* b) {
      return Ms(a->value("lifetime_ns", nlohmann::json())) >
             Ms(b->value("lifetime_ns", nlohmann::json()));
    });
    longest.resize(kThreadRows);
    std::erase_if(rows,
                  [&](const nlohmann::json* t) { return !absl::c_linear_search(longest, t); });
  }
  for (const nlohmann::json* row : rows) {
    const nlohmann::json& t = *row;
    const double life = Ms(t.value("lifetime_ns", nlohmann::json()));
    auto cell = [&](const char* key) {
      const double ms = Ms(t.value(key, nlohmann::json()));
      const double share = life > 0 ? 100 * ms / life : 0.0;
      // absl::StrFormat takes only literal formats.
      return md ? absl::StrFormat("%.1f (%.1f%%)", ms, share)
                : absl::StrFormat("%8.1f %6.1f%%", ms, share);
    };
    std::string name = t.value("name", std::string("?"));
    const bool never_ran = !t.value("ran", true);
    if (md) {
      absl::StrAppendFormat(&out, "| %s%s | %d | %.1f | %s | %s | %s |\n", MarkdownCode(name),
                            never_ran ? " (never ran)" : "", t.value("tid", 0), life,
                            cell("on_cpu_ns"), cell("blocked_ns"), cell("waiting_ns"));
    } else {
      if (never_ran) name += " (never ran)";
      absl::StrAppendFormat(&out, "%-20s %8d %10.1f %16s %16s %16s\n", name, t.value("tid", 0),
                            life, cell("on_cpu_ns"), cell("blocked_ns"), cell("waiting_ns"));
    }
  }
  if (listed > rows.size()) {
    absl::StrAppend(&out, md ? "\n" : "", "(the ", rows.size(), " longest-lived of ",
                    WithThousands(listed), " threads; the metadata JSON lists them all)\n");
  }
  // As record's summary says it: a lost switch-in leaves its thread off-CPU until its next record.
  const nlohmann::json& lost = metadata.contains("lost") ? metadata["lost"] : nlohmann::json();
  if (lost.is_object() && lost.contains("records") && lost["records"].is_number_integer() &&
      lost["records"].get<int64_t>() > 0) {
    absl::StrAppend(&out, md ? "\n" : "", "Upper bounds: with ",
                    WithThousands(lost["records"].get<uint64_t>()),
                    " records lost, time whose switch-in was lost counts as off-CPU.\n");
  }
  return out;
}

std::vector<BlockingCallSite> TopBlockingCallSites(const symbolize::Profile& profile,
                                                   size_t top_n,
                                                   const FrameModuleMap* frame_modules) {
  auto module_of = [&](uint32_t frame) -> const std::string* {
    if (frame_modules == nullptr) return nullptr;
    auto it = frame_modules->find(FoldedFrameName(profile.frames[frame]));
    return it == frame_modules->end() ? nullptr : &it->second;
  };
  absl::flat_hash_map<std::string, uint64_t> sites;
  for (const symbolize::ProfileStack& s : profile.stacks) {
    if (s.samples == 0) continue;
    // Innermost frame that is neither the kernel's nor a pseudo-frame, and its caller.
    int inner = -1;
    bool waiting = false;
    const std::string* pseudo = nullptr;  // the innermost pseudo-frame, which says why
    for (int i = static_cast<int>(s.frames.size()) - 1; i >= 0; --i) {
      const symbolize::ProfileFrame& f = profile.frames[s.frames[i]];
      if (f.function == symbolize::kWaitingForCpuFrame) waiting = true;
      if (symbolize::IsTimePseudoFrame(f.function) && pseudo == nullptr) pseudo = &f.function;
      if (f.kind == symbolize::ProfileFrameKind::kKernel ||
          symbolize::IsTimePseudoFrame(f.function)) {
        continue;
      }
      inner = i;
      break;
    }
    if (waiting) continue;
    std::string name;
    if (inner < 0) {
      // A thread's interval whose stack was never sampled ("[off-CPU, stack not sampled]") is
      // named so, not taken for a kernel thread.
      name = pseudo != nullptr ? *pseudo : "[kernel thread or no user stack]";
    } else {
      // The call is the library function the program called (the outermost frame of the run in
      // the innermost frame's shared library, then of the standard library compiled into the
      // program: Rust's std waits on a Condvar through its futex wrapper, which calls libc's
      // `syscall`), the caller the frame that called it. A program that enters the kernel itself
      // (a static binary, rustix's raw system calls) has no run to step over: its run would be
      // the whole program, up to its thread's start.
      const std::string* module = module_of(s.frames[inner]);
      if (module != nullptr && !absl::EndsWith(*module, ".so") &&
          !absl::StrContains(*module, ".so.")) {
        module = nullptr;  // not a shared object (libc.so.6, libfoo.so): the program
      }
      int call = inner;
      while (module != nullptr && call > 0) {
        const std::string* m = module_of(s.frames[call - 1]);
        if (m == nullptr || *m != *module) break;
        --call;
      }
      // Then the standard library's frames, and the C and C++ runtimes' a callback of theirs
      // passes through (std::call_once runs its function under libc's __pthread_once_slow),
      // unless that leads to the thread's root (a stack of the libraries' frames alone, or one
      // cut short): then the standard library's alone, as before.
      auto in_runtime = [&](uint32_t frame) {
        if (IsStandardLibraryFunction(profile.frames[frame].function)) return true;
        const std::string* m = module_of(frame);
        return m != nullptr && IsRuntimeLibraryModule(BaseNameOf(*m));
      };
      int through_runtime = call;
      while (through_runtime > 0 && in_runtime(s.frames[through_runtime - 1])) --through_runtime;
      if (through_runtime > 0) {
        call = through_runtime;
      } else {
        while (call > 0 && IsStandardLibraryFunction(profile.frames[s.frames[call - 1]].function)) {
          --call;
        }
      }
      name = profile.frames[s.frames[call]].function;
      if (call > 0) name = absl::StrCat(profile.frames[s.frames[call - 1]].function, " > ", name);
    }
    sites[name] += s.samples;
  }
  std::vector<BlockingCallSite> out;
  out.reserve(sites.size());
  for (auto& [name, count] : sites) out.push_back({name, count});
  std::sort(out.begin(), out.end(), [](const BlockingCallSite& a, const BlockingCallSite& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });
  if (out.size() > top_n) out.resize(top_n);
  return out;
}

std::string RenderBlockingCallSites(const std::vector<BlockingCallSite>& sites, uint64_t total,
                                    TableFormat format) {
  if (sites.empty()) return "";
  const bool md = format == TableFormat::kMarkdown;
  const int n = static_cast<int>(sites.size());
  const std::string top = TopHeading(n, "blocking call site", "blocking call sites");
  const std::string of = absl::StrCat(" (of ", WithThousands(total), " us off-CPU)");
  std::string out = md ? absl::StrCat("**", top, "**", of, "\n\n") : absl::StrCat(top, of, "\n");
  if (md) {
    out.append("| share | us | caller > call that blocked |\n|---:|---:|:---|\n");
  } else {
    absl::StrAppendFormat(&out, "%8s  %12s  %s\n", "share", "us", "caller > call that blocked");
  }
  for (const BlockingCallSite& s : sites) {
    if (md) {
      absl::StrAppendFormat(&out, "| %.2f%% | %s | %s |\n", Percent(s.count, total),
                            WithThousands(s.count), MarkdownCode(s.name));
    } else {
      absl::StrAppendFormat(&out, "%7.2f%%  %12s  %s\n", Percent(s.count, total),
                            WithThousands(s.count), s.name);
    }
  }
  return out;
}

}  // namespace nativeprof::output
