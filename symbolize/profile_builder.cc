#include "symbolize/profile_builder.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

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

  friend bool operator==(const AddressKey&, const AddressKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const AddressKey& k) {
    return H::combine(std::move(h), k.address, k.module, k.pid, k.leaf);
  }
};

struct StackKey {
  int32_t pid;
  int32_t tid;
  uint32_t thread_name;
  std::vector<uint32_t> frames;

  friend bool operator==(const StackKey&, const StackKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const StackKey& k) {
    return H::combine(std::move(h), k.pid, k.tid, k.thread_name, k.frames);
  }
};

class Builder {
 public:
  Builder(const unwind::StackCollector& collector, Symbolizer& symbolizer, Profile* profile)
      : collector_(collector), symbolizer_(symbolizer), profile_(profile) {}

  // Profile frame indexes for one collected frame, OUTERMOST first (root-first order).
  // `leaf` is true for the sampled instruction: only there does a source line say where the time
  // went (--lines adds file:line to leaf frames), so every other position drops it.
  const std::vector<uint32_t>& FramesFor(const unwind::CollectedFrame& f, int32_t pid, bool leaf) {
    AddressKey key{f.in_module() ? f.file_offset() : f.avma(), f.module(),
                   f.module() == sampler::kNoModule ? pid : 0, leaf};
    auto it = by_address_.find(key);
    if (it != by_address_.end()) return it->second;
    scratch_.clear();
    if (f.module() == unwind::kKernelModule) {
      symbolizer_.SymbolizeKernel(f.avma(), &scratch_);
    } else if (f.module() == sampler::kNoModule) {
      symbolizer_.SymbolizeUnmapped(pid, f.avma(), &scratch_);
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
    uint32_t index = static_cast<uint32_t>(profile_->frames.size());
    profile_->frames.push_back(std::move(frame));
    by_frame_.emplace(std::move(key), index);
    return index;
  }

  const unwind::StackCollector& collector_;
  Symbolizer& symbolizer_;
  Profile* profile_;
  std::vector<SymbolizedFrame> scratch_;
  absl::flat_hash_map<AddressKey, std::vector<uint32_t>> by_address_;
  absl::flat_hash_map<FrameKey, uint32_t> by_frame_;
};

}  // namespace

Profile BuildProfile(const unwind::StackCollector& collector, Symbolizer& symbolizer,
                     const ProfileBuildOptions& options) {
  Profile profile;
  profile.event = options.event;
  profile.weight_unit = options.weight_unit;
  profile.sample_frequency_hz = options.sample_frequency_hz;
  profile.duration_ns = options.duration_ns;

  Builder builder(collector, symbolizer, &profile);
  absl::flat_hash_map<StackKey, uint32_t> merged;
  std::vector<uint32_t> collected_to_profile(collector.stacks().size());
  const auto& all_frames = collector.frames();
  for (size_t i = 0; i < collector.stacks().size(); ++i) {
    const unwind::CollectedStack& cs = collector.stacks()[i];
    StackKey key{cs.pid, cs.tid, cs.thread_name, {}};
    // Collected stacks are leaf first; walk from the root.
    for (uint32_t k = cs.frame_count; k-- > 0;) {
      const std::vector<uint32_t>& expanded =
          builder.FramesFor(all_frames[cs.first_frame + k], cs.pid, /*leaf=*/k == 0);
      key.frames.insert(key.frames.end(), expanded.begin(), expanded.end());
    }
    auto [it, inserted] = merged.try_emplace(key, static_cast<uint32_t>(profile.stacks.size()));
    if (inserted) {
      ProfileStack stack;
      stack.thread_name = collector.thread_names()[cs.thread_name];
      stack.pid = cs.pid;
      stack.tid = cs.tid;
      stack.frames = std::move(key.frames);
      profile.stacks.push_back(std::move(stack));
    }
    ProfileStack& stack = profile.stacks[it->second];
    stack.samples += cs.samples;
    stack.weight += cs.weight;
    collected_to_profile[i] = it->second;
  }
  if (options.timeline) {
    profile.timeline.reserve(collector.timeline().size());
    for (const auto& [time, index] : collector.timeline()) {
      profile.timeline.push_back(TimedSample{time, collected_to_profile[index]});
    }
  }
  return profile;
}

}  // namespace nativeprof::symbolize
