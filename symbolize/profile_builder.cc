#include "symbolize/profile_builder.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "symbolize/go_runtime.h"

namespace nativeprof::symbolize {
namespace {

// Frames are interned by everything a writer shows; the offset of the first address seen is kept
// as the frame's representative location.
struct FrameKey {
  std::string function;
  ProfileFrameKind kind;
  std::string module;
  std::string file;
  uint32_t line;

  friend bool operator==(const FrameKey&, const FrameKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const FrameKey& k) {
    return H::combine(std::move(h), k.function, k.kind, k.module, k.file, k.line);
  }
};

struct AddressKey {
  uint64_t address;  // file offset for a frame in a module, else avma (CollectedFrame)
  sampler::ModuleId module;
  int32_t pid;  // only for unmapped addresses: JIT maps are per process
  bool leaf;    // leaf frames keep their source line
  UnmappedContext context;  // only for unmapped addresses

  friend bool operator==(const AddressKey&, const AddressKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const AddressKey& k) {
    return H::combine(std::move(h), k.address, k.module, k.pid, k.leaf, k.context);
  }
};

}  // namespace

// Each distinct address is symbolized once per recording, for every view built from it: frames
// are interned in a table of the recording's own, and a view copies those it uses into its
// profile. (The five allocation views used to symbolize every site again each.)
class FrameNames {
 public:
  FrameNames(const unwind::StackCollector& collector, Symbolizer& symbolizer)
      : collector_(collector), symbolizer_(symbolizer) {}

  // Recording frame indexes for one collected frame, OUTERMOST first (root-first order).
  // `leaf` is true for the sampled instruction: only there does a source line say where the time
  // went (--lines adds file:line to leaf frames), so every other position drops it. `context`
  // is what the stack tells of an unmapped frame (ignored for the others).
  const std::vector<uint32_t>& FramesFor(const unwind::CollectedFrame& f, int32_t pid, bool leaf,
                                         UnmappedContext context) {
    const bool unmapped = f.module() == sampler::kNoModule;
    AddressKey key{f.in_module() ? f.file_offset() : f.avma(), f.module(), unmapped ? pid : 0,
                   leaf, unmapped ? context : UnmappedContext::kNone};
    auto it = by_address_.find(key);
    if (it != by_address_.end()) return it->second;
    scratch_.clear();
    if (f.module() == unwind::kKernelModule) {
      symbolizer_.SymbolizeKernel(f.avma(), &scratch_);
    } else if (f.module() == sampler::kNoModule) {
      symbolizer_.SymbolizeUnmapped(pid, f.avma(), key.context, &scratch_);
    } else {
      symbolizer_.SymbolizeUser(pid, f.module(), f.file_offset(), /*avma=*/0, &scratch_);
    }
    for (size_t i = 0; i < scratch_.size(); ++i) {
      if (!leaf || i != 0) {
        scratch_[i].file.clear();
        scratch_[i].line = 0;
      }
    }
    std::vector<uint32_t> indexes;
    // The symbolizer returns innermost first; stacks are stored root first.
    for (auto s = scratch_.rbegin(); s != scratch_.rend(); ++s) {
      indexes.push_back(Intern(*s, f));
    }
    return by_address_.emplace(key, std::move(indexes)).first->second;
  }

  const ProfileFrame& frame(uint32_t index) const { return frames_[index]; }

 private:
  uint32_t Intern(const SymbolizedFrame& s, const unwind::CollectedFrame& f) {
    std::string module;
    std::string build_id;
    if (f.in_module()) {
      const sampler::ModuleInfo& info = collector_.modules().Get(f.module());
      module = info.path;
      build_id = info.build_id;
    } else if (f.module() == unwind::kKernelModule) {
      module = "[kernel.kallsyms]";
    }
    FrameKey key{s.function, s.kind, module, s.file, s.line};
    auto it = by_frame_.find(key);
    if (it != by_frame_.end()) return it->second;
    ProfileFrame frame;
    frame.function = s.function;
    frame.kind = s.kind;
    frame.module = module;
    frame.build_id = build_id;
    // Kernel and unmapped frames have carried their avma here since before the type said so;
    // writers' output depends on it.
    frame.module_offset = f.in_module() ? f.file_offset() : f.avma();
    frame.file = s.file;
    frame.line = s.line;
    const uint32_t index = static_cast<uint32_t>(frames_.size());
    frames_.push_back(std::move(frame));
    by_frame_.emplace(std::move(key), index);
    return index;
  }

  const unwind::StackCollector& collector_;
  Symbolizer& symbolizer_;
  std::vector<SymbolizedFrame> scratch_;
  std::vector<ProfileFrame> frames_;
  absl::flat_hash_map<AddressKey, std::vector<uint32_t>> by_address_;
  absl::flat_hash_map<FrameKey, uint32_t> by_frame_;
};

namespace {

// The frames of one profile: the recording's frames it uses, in the order it first used them.
class ProfileFrames {
 public:
  ProfileFrames(FrameNames& names, Profile* profile) : names_(names), profile_(profile) {}

  // Root-first profile frames of a collected stack.
  std::vector<uint32_t> Of(const unwind::StackCollector& collector,
                           const unwind::CollectedStack& cs) {
    const auto& all_frames = collector.frames();
    const UnmappedContext context = UnmappedContextOf(all_frames, cs);
    std::vector<uint32_t> frames;
    for (uint32_t k = cs.frame_count; k-- > 0;) {
      for (uint32_t index :
           names_.FramesFor(all_frames[cs.first_frame + k], cs.pid, /*leaf=*/k == 0, context)) {
        frames.push_back(Local(index));
      }
    }
    // Above the innermost Go stack switch lie stale frames of the scheduler stack (an unwinder
    // that walked on found [unknown];runtime.newproc.abi0 there): the stack starts at it.
    for (size_t i = frames.size(); i-- > 1;) {
      const ProfileFrame& f = profile_->frames[frames[i]];
      if (f.kind != ProfileFrameKind::kKernel && IsGoStackSwitch(f.function)) {
        frames.erase(frames.begin(), frames.begin() + static_cast<ptrdiff_t>(i));
        break;
      }
    }
    return frames;
  }

 private:
  // kInsideExecve for a stack with an unmapped user frame under an execve (IsExecveFunction):
  // the kernel part, leaf end first, is named before the user part for it.
  UnmappedContext UnmappedContextOf(const std::vector<unwind::CollectedFrame>& all_frames,
                                    const unwind::CollectedStack& cs) {
    const auto first = all_frames.begin() + cs.first_frame;
    const auto last = first + cs.frame_count;
    if (std::none_of(first, last, [](const unwind::CollectedFrame& f) {
          return f.module() == sampler::kNoModule;
        })) {
      return UnmappedContext::kNone;
    }
    for (auto f = first; f != last && f->module() == unwind::kKernelModule; ++f) {
      const bool leaf = f == first;
      for (uint32_t index : names_.FramesFor(*f, cs.pid, leaf, UnmappedContext::kNone)) {
        if (IsExecveFunction(names_.frame(index).function)) return UnmappedContext::kInsideExecve;
      }
    }
    return UnmappedContext::kNone;
  }

  static constexpr uint32_t kNotInProfile = 0xffffffffu;
  uint32_t Local(uint32_t index) {
    if (index >= local_.size()) local_.resize(index + 1, kNotInProfile);
    if (local_[index] == kNotInProfile) {
      local_[index] = static_cast<uint32_t>(profile_->frames.size());
      profile_->frames.push_back(names_.frame(index));
    }
    return local_[index];
  }

  FrameNames& names_;
  Profile* profile_;
  std::vector<uint32_t> local_;  // recording frame -> profile frame
};

// Adds stacks to a profile, merging those that symbolize to the same (thread, frames, on/off).
// The set holds stack indexes and reads their frames from the profile, so each stack's frames
// are stored once.
class StackMerger {
 public:
  // `merge_threads`: stacks of threads with the same name are one (ProfileBuildOptions).
  StackMerger(Profile* profile, bool merge_threads)
      : profile_(profile), merge_threads_(merge_threads), merged_(0, Hash{this}, Eq{this}) {}
  uint32_t Add(const unwind::CollectedStack& cs, const std::string& thread_name,
               std::vector<uint32_t> frames, bool off_cpu) {
    const int32_t pid = merge_threads_ ? 0 : cs.pid;
    const int32_t tid = merge_threads_ ? 0 : cs.tid;
    const Probe probe{pid, tid, cs.thread_name, frames, off_cpu};
    auto it = merged_.find(probe);
    if (it != merged_.end()) return *it;
    const uint32_t index = static_cast<uint32_t>(profile_->stacks.size());
    ProfileStack stack;
    stack.thread_name = thread_name;
    stack.pid = pid;
    stack.tid = tid;
    stack.frames = std::move(frames);
    stack.off_cpu = off_cpu;
    profile_->stacks.push_back(std::move(stack));
    thread_name_index_.push_back(cs.thread_name);
    merged_.insert(index);
    return index;
  }

 private:
  struct Probe {
    int32_t pid;
    int32_t tid;
    uint32_t thread_name;
    absl::Span<const uint32_t> frames;
    bool off_cpu;
  };
  Probe ProbeOf(uint32_t index) const {
    const ProfileStack& s = profile_->stacks[index];
    return {s.pid, s.tid, thread_name_index_[index], s.frames, s.off_cpu};
  }
  struct Hash {
    using is_transparent = void;
    const StackMerger* merger;
    size_t operator()(const Probe& p) const {
      return absl::HashOf(p.pid, p.tid, p.thread_name, p.frames, p.off_cpu);
    }
    size_t operator()(uint32_t index) const { return (*this)(merger->ProbeOf(index)); }
  };
  struct Eq {
    using is_transparent = void;
    const StackMerger* merger;
    static bool Same(const Probe& a, const Probe& b) {
      return a.pid == b.pid && a.tid == b.tid && a.thread_name == b.thread_name &&
             a.off_cpu == b.off_cpu && a.frames == b.frames;
    }
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(uint32_t a, const Probe& b) const { return Same(merger->ProbeOf(a), b); }
    bool operator()(const Probe& a, uint32_t b) const { return Same(a, merger->ProbeOf(b)); }
  };

  Profile* profile_;
  bool merge_threads_;
  std::vector<uint32_t> thread_name_index_;  // by profile stack: CollectedStack::thread_name
  absl::flat_hash_set<uint32_t, Hash, Eq> merged_;
};

// The profile frame for a pseudo-frame such as "[waiting for CPU]".
uint32_t PseudoFrame(Profile* profile, absl::flat_hash_map<std::string, uint32_t>* interned,
                     const std::string& name) {
  auto [it, inserted] = interned->try_emplace(name, static_cast<uint32_t>(profile->frames.size()));
  if (inserted) {
    ProfileFrame frame;
    frame.function = name;
    profile->frames.push_back(std::move(frame));
  }
  return it->second;
}

// The figure an allocation view shows for a site.
using AllocMetric = double (*)(const unwind::AllocSite&);
AllocMetric AllocMetricOf(ProfileView view) {
  switch (view) {
    case ProfileView::kAllocCount:
      return [](const unwind::AllocSite& s) { return s.count; };
    case ProfileView::kTemporary:
      return [](const unwind::AllocSite& s) { return s.temporary; };
    case ProfileView::kPeakBytes:
      return [](const unwind::AllocSite& s) { return s.peak_bytes; };
    case ProfileView::kLeakedBytes:
      return [](const unwind::AllocSite& s) { return s.live_bytes; };
    default:
      return [](const unwind::AllocSite& s) { return s.bytes; };
  }
}

}  // namespace

SampleType AllocSampleTypeOf(ProfileView view) {
  switch (view) {
    case ProfileView::kAllocCount: return {"alloc_objects", "count"};
    case ProfileView::kTemporary: return {"temporary_objects", "count"};
    case ProfileView::kPeakBytes: return {"inuse_space", "bytes"};
    case ProfileView::kLeakedBytes: return {"leaked_space", "bytes"};
    default: return {"alloc_space", "bytes"};
  }
}

const char* AllocViewUnit(ProfileView view) {
  return view == ProfileView::kAllocCount || view == ProfileView::kTemporary ? "allocations"
                                                                             : "bytes";
}

namespace {

// The timeline entries of the [on-CPU, not sampled] lines: one per stretch of the thread's
// lifetime between its off-CPU intervals, so its time-ordered samples cover the lifetime as its
// line in the view does. The last stretch takes what the others leave of the line's weight
// (on_cpu_ns also leaves out the gap of an exec that took over the main thread's tid).
void AddNotSampledTimeline(const std::vector<unwind::ThreadTimes>& threads,
                           const std::vector<std::pair<size_t, uint32_t>>& not_sampled,
                           const std::deque<unwind::OffCpuInterval>& intervals,
                           Profile* profile) {
  if (not_sampled.empty()) return;
  absl::flat_hash_map<std::pair<int32_t, int32_t>, std::vector<const unwind::OffCpuInterval*>>
      by_thread;
  for (const auto& [k, stack] : not_sampled) by_thread[{threads[k].pid, threads[k].tid}];
  for (const unwind::OffCpuInterval& iv : intervals) {
    auto it = by_thread.find(std::make_pair(iv.pid, iv.tid));
    if (it != by_thread.end()) it->second.push_back(&iv);
  }
  for (const std::pair<size_t, uint32_t>& line : not_sampled) {
    const unwind::ThreadTimes& t = threads[line.first];
    const uint32_t stack = line.second;  // not a structured binding: lambdas capture it
    std::vector<const unwind::OffCpuInterval*>& own = by_thread[{t.pid, t.tid}];
    std::sort(own.begin(), own.end(), [](const auto* a, const auto* b) {
      return a->start_ns < b->start_ns;
    });
    const uint64_t total = t.on_cpu_ns();
    uint64_t placed = 0;
    uint64_t from = t.first_ns;
    auto place = [&](uint64_t at, uint64_t ns) {
      ns = std::min(ns, total - placed);
      // A weight of 0 would read as "the stack's own"; nothing to draw anyway.
      if (ns == 0) return;
      profile->timeline.push_back(TimedSample{at, stack, ns});
      placed += ns;
    };
    for (const unwind::OffCpuInterval* iv : own) {
      if (iv->start_ns > from) place(from, iv->start_ns - from);
      from = std::max(from, iv->start_ns + iv->duration_ns);
    }
    place(from, total - placed);
  }
}

}  // namespace

bool IsAllocView(ProfileView view) {
  return view == ProfileView::kAllocBytes || view == ProfileView::kAllocCount ||
         view == ProfileView::kTemporary || view == ProfileView::kPeakBytes ||
         view == ProfileView::kLeakedBytes || view == ProfileView::kHeap;
}

ProfileBuilder::ProfileBuilder(const unwind::StackCollector& collector, Symbolizer& symbolizer)
    : collector_(collector), names_(std::make_unique<FrameNames>(collector, symbolizer)) {}

ProfileBuilder::~ProfileBuilder() = default;

Profile BuildProfile(const unwind::StackCollector& collector, Symbolizer& symbolizer,
                     const ProfileBuildOptions& options) {
  return ProfileBuilder(collector, symbolizer).Build(options);
}

Profile ProfileBuilder::Build(const ProfileBuildOptions& options) {
  const unwind::StackCollector& collector = collector_;
  Profile profile;
  profile.event = options.event;
  profile.weight_unit = options.weight_unit;
  profile.sample_frequency_hz = options.sample_frequency_hz;
  profile.duration_ns = options.duration_ns;
  const bool alloc = IsAllocView(options.view);
  const bool cpu = options.view != ProfileView::kOffCpu && !alloc;
  const bool off = options.view != ProfileView::kCpu && !alloc;
  if (options.view == ProfileView::kOffCpu) profile.event = "off-cpu";
  if (options.view == ProfileView::kWall) profile.event = "wall";
  if (off) {
    profile.weight_unit = "nanoseconds";
    profile.count_unit = "us";
  }

  ProfileFrames profile_frames(*names_, &profile);
  StackMerger merger(&profile, options.merge_threads && alloc);
  auto frames_of = [&](const unwind::CollectedStack& cs) {
    return profile_frames.Of(collector, cs);
  };

  // The wall view: a thread's CPU samples share out its on-CPU time, which the switch records
  // give exactly (unwind::ThreadTimes::on_cpu_ns), so its on- and off-CPU time add up to its
  // lifetime. By tid: the samples' periods are scaled by this.
  absl::flat_hash_map<int32_t, double> wall_scale;
  absl::flat_hash_map<int32_t, uint64_t> sampled;
  std::vector<unwind::ThreadTimes> threads;
  if (cpu && off) {
    sampled = collector.CpuWeightByTid();
    threads = collector.off_cpu().Threads();
    for (const unwind::ThreadTimes& t : threads) {
      auto it = sampled.find(t.tid);
      if (it != sampled.end() && it->second > 0 && t.ran) {
        wall_scale[t.tid] = static_cast<double>(t.on_cpu_ns()) / static_cast<double>(it->second);
      }
    }
  }
  auto wall_weight = [&](int32_t tid, uint64_t weight) {
    auto it = wall_scale.find(tid);
    return it == wall_scale.end()
               ? weight
               : static_cast<uint64_t>(std::llround(static_cast<double>(weight) * it->second));
  };

  constexpr uint32_t kNotInView = 0xffffffffu;
  std::vector<uint32_t> collected_to_profile(collector.stacks().size(), kNotInView);
  for (size_t i = 0; i < collector.stacks().size() && cpu; ++i) {
    const unwind::CollectedStack& cs = collector.stacks()[i];
    if (cs.kind != unwind::StackKind::kCpu) continue;
    const uint32_t index =
        merger.Add(cs, collector.thread_names()[cs.thread_name], frames_of(cs), false);
    ProfileStack& stack = profile.stacks[index];
    stack.samples += cs.samples;
    stack.weight += off ? wall_weight(cs.tid, cs.weight) : cs.weight;
    collected_to_profile[i] = index;
  }
  absl::flat_hash_map<std::string, uint32_t> pseudo;  // pseudo frame name -> frame
  // (index into `threads`, profile stack) of each [on-CPU, not sampled] line.
  std::vector<std::pair<size_t, uint32_t>> not_sampled;
  if (cpu && off) {
    // A thread's on-CPU time that no CPU sample fell in (1,811 of 2,000 short-lived threads, 84 %
    // of their on-CPU time) would be missing from the view, whose lines add up each thread's
    // lifetime: it is a line of its own.
    for (size_t k = 0; k < threads.size(); ++k) {
      const unwind::ThreadTimes& t = threads[k];
      const auto weight = sampled.find(t.tid);
      if ((weight != sampled.end() && weight->second > 0) || t.on_cpu_ns() == 0) continue;
      unwind::CollectedStack cs;
      cs.pid = t.pid;
      cs.tid = t.tid;
      cs.thread_name = 0xffffffffu;  // keyed by tid, as an interval without a stack is
      const uint32_t index =
          merger.Add(cs, collector.processes().ThreadName(t.pid, t.tid),
                     {PseudoFrame(&profile, &pseudo, kOnCpuNotSampledFrame)}, false);
      profile.stacks[index].weight += t.on_cpu_ns();
      not_sampled.emplace_back(k, index);
    }
  }

  if (alloc) {
    const AllocMetric metric = AllocMetricOf(options.view);
    profile.event = AllocSampleTypeOf(options.view).type;
    profile.weight_unit = AllocViewUnit(options.view);
    profile.count_unit = AllocViewUnit(options.view);
    profile.sample_frequency_hz = 0;
    const bool heap = options.view == ProfileView::kHeap;
    if (heap) {
      profile.event = "heap";
      profile.sample_types = {{"alloc_objects", "count"},
                              AllocSampleTypeOf(ProfileView::kAllocBytes),
                              {"inuse_objects", "count"},
                              AllocSampleTypeOf(ProfileView::kPeakBytes),
                              {"leaked_objects", "count"},
                              AllocSampleTypeOf(ProfileView::kLeakedBytes)};
      profile.default_sample_type = AllocSampleTypeOf(ProfileView::kAllocBytes).type;
      profile.period_type = {"space", "bytes"};
      profile.period = collector.allocations().rate();
    }
    auto round = [](double v) { return v >= 0.5 ? static_cast<uint64_t>(std::llround(v)) : 0; };
    const std::vector<unwind::AllocSite>& sites = collector.allocations().sites();
    for (size_t i = 0; i < collector.stacks().size() && i < sites.size(); ++i) {
      const unwind::CollectedStack& cs = collector.stacks()[i];
      if (cs.kind != unwind::StackKind::kAlloc) continue;
      const unwind::AllocSite& site = sites[i];
      // Rounds to nothing (or is a tiny negative left by subtracting estimates).
      const uint64_t n = round(heap ? site.bytes : metric(site));
      if (n == 0) continue;
      const uint32_t index =
          merger.Add(cs, collector.thread_names()[cs.thread_name], frames_of(cs), false);
      ProfileStack& stack = profile.stacks[index];
      stack.samples += n;
      stack.weight += n;
      if (heap) {
        const uint64_t v[] = {round(site.count),      round(site.bytes),
                              round(site.peak_count), round(site.peak_bytes),
                              round(site.live_count), round(site.live_bytes)};
        stack.values.resize(std::size(v));
        for (size_t k = 0; k < std::size(v); ++k) stack.values[k] += v[k];
      }
    }
    return profile;
  }

  // Off-CPU intervals: one profile stack per (switch-out stack, blocked or waiting).
  std::vector<uint32_t> interval_stack;
  if (off) {
    const unwind::OffCpuTracker& tracker = collector.off_cpu();
    // (collected stack, waiting, first) -> profile stack; kNoSampledStack intervals key by tid.
    absl::flat_hash_map<std::tuple<uint32_t, int32_t, bool, bool>, uint32_t> by_switch;
    // A thread's first interval, before it ran (a new thread waiting for its first run), has no
    // stack of its own; it is named as the thread was then, not by the name it took later
    // (pthread_setname_np once it ran): a new thread's name at its creation, else (one there
    // when recording began) its earliest stack's (stacks are interned in the order they were
    // first seen).
    absl::flat_hash_map<std::pair<int32_t, int32_t>, uint32_t> first_name;
    for (const unwind::CollectedStack& cs : collector.stacks()) {
      if (cs.thread_name < collector.thread_names().size()) {
        first_name.try_emplace(std::pair(cs.pid, cs.tid), cs.thread_name);
      }
    }
    interval_stack.reserve(tracker.intervals().size());
    for (const unwind::OffCpuInterval& iv : tracker.intervals()) {
      const bool no_stack = iv.stack == unwind::kNoSampledStack;
      auto [it, inserted] = by_switch.try_emplace(
          {iv.stack, no_stack ? iv.tid : 0, iv.waiting, no_stack && iv.first}, 0);
      if (inserted) {
        unwind::CollectedStack cs;
        std::vector<uint32_t> frames;
        std::string thread_name;
        if (iv.stack != unwind::kNoSampledStack) {
          cs = collector.stacks()[iv.stack];
          thread_name = collector.thread_names()[cs.thread_name];
          frames = frames_of(cs);
        } else {
          cs.pid = iv.pid;
          cs.tid = iv.tid;
          cs.thread_name = 0xffffffffu;  // thread-name index unused here; keyed by tid
          auto created = iv.first && iv.created
                             ? collector.names_at_creation().find({iv.tid, iv.start_ns})
                             : collector.names_at_creation().end();
          auto named = iv.first ? first_name.find(std::pair(iv.pid, iv.tid)) : first_name.end();
          thread_name = created != collector.names_at_creation().end()
                            ? collector.thread_names()[created->second]
                        : named != first_name.end()
                            ? collector.thread_names()[named->second]
                            : collector.processes().ThreadName(iv.pid, iv.tid);
          if (iv.first && iv.created) {
            frames.push_back(PseudoFrame(&profile, &pseudo,
                                         iv.pid == iv.tid ? kNewProcessFrame : kNewThreadFrame));
          }
        }
        if (iv.waiting) {
          // Preempted in user code or on the way back to it: the kernel frames are the
          // scheduler's, not a call that waits.
          std::erase_if(frames, [&](uint32_t f) {
            return profile.frames[f].kind == ProfileFrameKind::kKernel;
          });
          frames.push_back(PseudoFrame(&profile, &pseudo, kWaitingForCpuFrame));
        } else if (frames.empty()) {
          frames.push_back(PseudoFrame(&profile, &pseudo, kNoSwitchStackFrame));
        }
        it->second = merger.Add(cs, thread_name, std::move(frames), true);
      }
      ProfileStack& stack = profile.stacks[it->second];
      ++stack.samples;  // converted to microseconds below
      stack.weight += iv.duration_ns;
      interval_stack.push_back(it->second);
    }
    for (ProfileStack& s : profile.stacks) s.samples = (s.weight + 500) / 1000;
  }

  if (options.timeline) {
    if (cpu) {
      profile.timeline.reserve(collector.timeline().size());
      for (const auto& [time, index] : collector.timeline()) {
        const uint32_t stack = collected_to_profile[index];
        uint64_t weight = 0;
        if (off) {
          const unwind::CollectedStack& cs = collector.stacks()[index];
          weight = cs.samples == 0 ? 0 : wall_weight(cs.tid, cs.weight) / cs.samples;
        }
        profile.timeline.push_back(TimedSample{time, stack, weight});
      }
    }
    const auto& intervals = collector.off_cpu().intervals();
    for (size_t i = 0; i < interval_stack.size(); ++i) {
      profile.timeline.push_back(
          TimedSample{intervals[i].start_ns, interval_stack[i], intervals[i].duration_ns});
    }
    if (cpu && off) {
      AddNotSampledTimeline(threads, not_sampled, collector.off_cpu().intervals(), &profile);
      std::stable_sort(profile.timeline.begin(), profile.timeline.end(),
                       [](const TimedSample& a, const TimedSample& b) {
                         return a.time_ns < b.time_ns;
                       });
    }
  }
  return profile;
}

}  // namespace nativeprof::symbolize
