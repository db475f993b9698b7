// Consumes the records of a session: keeps the process table current, unwinds each sample,
// resolves every frame to (module, file offset) while the mapping is known, and interns the
// resulting stacks with their sample counts. Steady state allocates only when a new distinct stack
// or thread name appears. Stack bytes never outlive OnSample. Drain thread only.
#ifndef NATIVEPROF_UNWIND_STACK_COLLECTOR_H_
#define NATIVEPROF_UNWIND_STACK_COLLECTOR_H_

#include <array>
#include <cassert>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "absl/strings/string_view.h"
#include "sampler/module_registry.h"
#include "sampler/process_table.h"
#include "sampler/records.h"
#include "unwind/alloc_tracker.h"
#include "unwind/off_cpu_tracker.h"
#include "unwind/unwinder.h"

namespace nativeprof::unwind {

inline constexpr sampler::ModuleId kKernelModule = 0xfffffffeu;

// A frame resolved at sample time: the module it lies in and where. Where is a number in a
// different address space per kind of frame, so it is read only through the accessor that names
// its space: file_offset() for a frame in a mapped file (the offset of the lookup address, avma - 1
// for return addresses, in `module()`), avma() for a kernel frame (module() == kKernelModule) or
// an address in no mapping (module() == sampler::kNoModule).
class CollectedFrame {
 public:
  CollectedFrame() = default;
  static CollectedFrame InModule(sampler::ModuleId module, uint64_t file_offset) {
    return CollectedFrame(file_offset, module);
  }
  static CollectedFrame Kernel(uint64_t avma) { return CollectedFrame(avma, kKernelModule); }
  static CollectedFrame Unmapped(uint64_t avma) { return CollectedFrame(avma, sampler::kNoModule); }

  sampler::ModuleId module() const { return module_; }
  bool in_module() const { return module_ != sampler::kNoModule && module_ != kKernelModule; }
  // Offset in the module's file; only for in_module() frames.
  uint64_t file_offset() const {
    assert(in_module());
    return file_offset_or_avma_;
  }
  // Lookup avma; only for kernel and unmapped frames.
  uint64_t avma() const {
    assert(!in_module());
    return file_offset_or_avma_;
  }

  friend bool operator==(const CollectedFrame&, const CollectedFrame&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const CollectedFrame& f) {
    return H::combine(std::move(h), f.file_offset_or_avma_, f.module_);
  }

 private:
  CollectedFrame(uint64_t file_offset_or_avma, sampler::ModuleId module)
      : file_offset_or_avma_(file_offset_or_avma), module_(module) {}

  uint64_t file_offset_or_avma_ = 0;  // which one: see module_
  sampler::ModuleId module_ = sampler::kNoModule;
  uint32_t reserved_ = 0;  // always 0: the collector hashes and compares frames as raw bytes
};

// Which event a collected stack was sampled by. Part of a stack's identity: the same frames
// on and off the CPU are two stacks.
enum class StackKind : uint8_t {
  kCpu,     // the CPU sampling event; weight = sum of periods
  kSwitch,  // a switch-out (--off-cpu); its time off-CPU is in the OffCpuTracker's intervals
  kAlloc,   // a sampled allocation (--alloc); its estimates are in the AllocTracker's sites
};

struct CollectedStack {
  StackKind kind = StackKind::kCpu;
  int32_t pid = 0;
  int32_t tid = 0;
  uint32_t thread_name = 0;  // index into StackCollector::thread_names()
  uint32_t first_frame = 0;  // into StackCollector::frames(), shared by equal lists; leaf first
  uint32_t frame_count = 0;
  uint64_t samples = 0;      // samples (kSwitch: switch-outs) with this stack
  uint64_t weight = 0;       // sum of sample periods (kSwitch: 0)
};

struct CollectorStats {
  uint64_t samples = 0;         // CPU samples
  uint64_t switch_samples = 0;  // context-switch samples (--off-cpu)
  uint64_t alloc_samples = 0;   // sampled allocations (--alloc)
  uint64_t free_samples = 0;    // frees of sampled blocks (--alloc)
  uint64_t alloc_stack_bytes = 0;  // user-stack bytes the sampled allocations carried, summed
  uint64_t lost_records = 0;    // PERF_RECORD_LOST: samples and records the ring overwrote
  uint64_t lost_samples = 0;    // PERF_RECORD_LOST_SAMPLES
  uint64_t throttled = 0;       // PERF_RECORD_THROTTLE events
  uint64_t frames = 0;
  uint64_t unmapped_frames = 0; // user frames in no known mapping
  uint64_t kernel_frames = 0;
  uint64_t spliced = 0;
  std::array<uint64_t, kStackEndCount> ends{};  // samples by StackEnd
  // Of ends[kTruncatedStack]: switch samples (cut at their own --off-cpu-stack copy), and CPU
  // samples whose copy the kernel ended short of the size asked for (it copies only stack pages
  // in memory, so a large frame's untouched pages stop it).
  uint64_t truncated_switch = 0;
  uint64_t switch_spliced = 0;  // switch samples cut at their copy, finished by the kernel chain
  uint64_t truncated_short_copy = 0;
  uint64_t first_time_ns = 0;
  uint64_t last_time_ns = 0;
};

class StackCollector final : public sampler::RecordSink {
 public:
  // `unwinder` must outlive the collector. `keep_timeline` records (time, stack) per sample.
  StackCollector(Unwinder* unwinder, bool keep_timeline);

  // Called for every code mapping as it is applied, with the module it was interned as, so later
  // stages can act while the process is alive (hold the file open through
  // /proc/PID/map_files, read the vdso). Runs on the drain thread; must not block.
  using MappingObserver = std::function<void(const sampler::MmapView&, sampler::ModuleId)>;
  void set_mapping_observer(MappingObserver observer) { mapping_observer_ = std::move(observer); }
  // Called on the drain thread with the frames of each stack whose frame list is new (a symbolizer
  // prepares their names while the target runs).
  using NewFramesObserver = std::function<void(absl::Span<const CollectedFrame>)>;
  void set_new_frames_observer(NewFramesObserver observer) {
    new_frames_observer_ = std::move(observer);
  }

  // Called after each sampled allocation's unwind with its thread and UnwoundStack::stack_high
  // (0 when the unwind did not complete), and with 0 when a thread starts, exits or execs, so
  // the preload can copy no more stack than the thread's unwinds need
  // (sampler::AllocChannel::SetStackHint). Drain thread; must not block.
  using AllocStackObserver = std::function<void(uint32_t tid, uint64_t stack_high)>;
  void set_alloc_stack_observer(AllocStackObserver observer) {
    alloc_stack_observer_ = std::move(observer);
  }

  // Called when a process's main thread exits (as the process table counts a process's end),
  // with its pid and the exit's time, after its image's blocks left the live heap (frees of them
  // made now still find them). Drain thread; must not block.
  using ProcessExitObserver = std::function<void(uint32_t pid, uint64_t time_ns)>;
  void set_process_exit_observer(ProcessExitObserver observer) {
    process_exit_observer_ = std::move(observer);
  }

  void OnSample(const sampler::SampleView& sample) override;
  void OnMmap(const sampler::MmapView& mmap) override;
  void OnComm(const sampler::CommView& comm) override;
  void OnTask(const sampler::TaskView& task) override;
  void OnLost(const sampler::LostView& lost) override;
  void OnThrottle(const sampler::ThrottleView& throttle) override;
  void OnSwitch(const sampler::SwitchView& sw) override;
  // A thread already blocked when recording started (attach mode), described by a sample built
  // from /proc (sampler::BlockedThreadSample): unwound like a switch sample, and given to the
  // off-CPU tracker for the interval the thread is in.
  // `guesses` are the same snapshot with each of its rbp guesses (sampler::BlockedThread), most
  // likely first: of those that unwind completely the deepest is kept, else the first.
  void OnBlockedAtStart(std::span<const sampler::SampleView> guesses);
  // Thread `tid`, noted by OnBlockedAtStart, ran after its snapshot was read and before sampling
  // started (the snapshots are read before the events are enabled): the snapshot describes an
  // interval that is over, and is dropped.
  void ForgetBlockedAtStart(int32_t pid, int32_t tid);
  // /proc lists a blocked thread's kernel stack without the scheduler's functions (schedule,
  // do_nanosleep, schedule_hrtimeout_range, ...), which switch samples have. Each stack
  // OnBlockedAtStart noted is replaced, in the off-CPU intervals, by the most sampled switch stack
  // of the same thread that it is part of (the same user frames; its kernel frames among the
  // other's, in order): the same blocked call, named as a switch sample names it. Call after the
  // off-CPU tracker's Finish.
  void CompleteBlockedAtStartStacks();

  // Off-CPU bookkeeping (--off-cpu): thread creation, exit and CPU samples feed the tracker too.
  // The caller sets the recording start and calls Finish on the tracker once the last record is
  // in.
  void track_off_cpu() { track_off_cpu_ = true; }
  bool tracks_off_cpu() const { return track_off_cpu_; }
  const OffCpuTracker& off_cpu() const { return off_cpu_; }
  // Allocation sites (--alloc). The caller sets the sampling rate and calls Finish at the end.
  const AllocTracker& allocations() const { return alloc_; }
  AllocTracker& mutable_allocations() { return alloc_; }
  OffCpuTracker& mutable_off_cpu() { return off_cpu_; }

  const std::vector<CollectedStack>& stacks() const { return stacks_; }
  // By tid, the periods of its CPU samples summed: the on-CPU time the samples estimate.
  absl::flat_hash_map<int32_t, uint64_t> CpuWeightByTid() const;
  const std::vector<CollectedFrame>& frames() const { return frames_; }
  const std::vector<std::string>& thread_names() const { return thread_names_; }
  // --off-cpu: by (tid, creation time), the thread_names() index of each thread created while
  // recording, named as it was then (its creator's name, before any pthread_setname_np of its
  // own): the name of its wait for its first run, which starts at its creation. The time tells
  // apart two threads that had the same tid, one after the other.
  using ThreadCreation = std::pair<int32_t, uint64_t>;
  const absl::flat_hash_map<ThreadCreation, uint32_t>& names_at_creation() const {
    return names_at_creation_;
  }
  // (time_ns, stack index) per sample, in arrival order; empty unless keep_timeline.
  const std::deque<std::pair<uint64_t, uint32_t>>& timeline() const { return timeline_; }
  const sampler::ModuleRegistry& modules() const { return modules_; }
  sampler::ModuleRegistry& mutable_modules() { return modules_; }
  const sampler::ProcessTable& processes() const { return processes_; }
  sampler::ProcessTable& mutable_processes() {
    ForgetThreads();  // the caller may rename threads
    return processes_;
  }
  const CollectorStats& stats() const { return stats_; }
  // What the unwinder counted besides: frames found by fallbacks and by expression rules.
  UnwinderStats unwinder_stats() const { return unwinder_->stats(); }

 private:
  // Set entries are stack indexes; kProbe stands for the candidate in probe_ (heterogeneous
  // lookup without building a key object per sample).
  static constexpr uint32_t kProbe = 0xffffffffu;
  // A new stack's frame list is interned apart from the stacks: the same frames sampled in
  // another process or thread (the hundredth python a shell loop starts) share one range of
  // frames_, where each (kind, pid, tid, name) kept a copy of its own. Only a new stack looks
  // its list up; a sample of a known stack finds it in stack_index_ alone, as before.
  struct FramesHash {
    const StackCollector* owner;
    size_t operator()(uint32_t index) const;
  };
  struct FramesEq {
    const StackCollector* owner;
    bool operator()(uint32_t a, uint32_t b) const;
  };
  struct StackHash {
    const StackCollector* owner;
    size_t operator()(uint32_t index) const;
  };
  struct StackEq {
    const StackCollector* owner;
    bool operator()(uint32_t a, uint32_t b) const;
  };
  struct Probe {
    StackKind kind = StackKind::kCpu;
    int32_t pid = 0, tid = 0;
    uint32_t thread_name = 0;
    std::vector<CollectedFrame> frames;
  };
  // The frames of stack `index` (probe_'s for kProbe) as raw bytes, to hash and compare.
  absl::string_view FrameBytesOf(uint32_t index) const;
  size_t HashOf(uint32_t index) const;
  uint32_t InternThreadName(const std::string& name);
  // Unwinds `sample`, resolves its frames and returns the index of its (possibly new) stack.
  uint32_t InternSample(const sampler::SampleView& sample, StackKind kind);
  // True when stack `whole` has every frame of `part`, with the same user frames and `part`'s
  // kernel frames among its own in order, and more of them.
  bool KernelFramesExtend(const CollectedStack& whole, const CollectedStack& part) const;
  // Drops every ThreadSlot: a thread's name may have changed.
  void ForgetThreads() { ++names_generation_; }

  // What OnSample needs about a thread, remembered per tid so a sample does not look up its
  // process, note its tid, and hash its name string again. Valid while `generation` equals
  // names_generation_ (COMM and FORK/EXIT records bump it). Process objects never move.
  struct ThreadSlot {
    int32_t pid = 0;
    int32_t tid = 0;
    uint64_t generation = 0;  // 0: empty
    sampler::Process* process = nullptr;
    uint32_t thread_name = 0;
  };
  static constexpr size_t kThreadSlots = 64;

  // The stack a memoized unwind (UnwoundStack::replayed_from) was last interned as, with what
  // resolving its frames counted, so replaying the same entry for the same thread skips the
  // frames' mapping look-ups and the stack table's hash of them. Direct-mapped by entry id.
  struct ReplayedStack {
    uint64_t entry = 0;  // 0: empty
    uint64_t names_generation = 0;
    int32_t pid = 0, tid = 0;
    StackKind kind = StackKind::kCpu;
    uint32_t index = 0;
    uint32_t frames = 0, unmapped_frames = 0;
  };
  static constexpr size_t kReplayedSlots = 256;

  Unwinder* unwinder_;
  bool keep_timeline_;
  sampler::ModuleRegistry modules_;
  sampler::ProcessTable processes_;
  UnwoundStack scratch_stack_;
  Probe probe_;
  std::vector<CollectedFrame> frames_;
  std::vector<CollectedStack> stacks_;
  absl::flat_hash_set<uint32_t, FramesHash, FramesEq> frame_list_index_;  // first stack per list
  absl::flat_hash_set<uint32_t, StackHash, StackEq> stack_index_;
  std::vector<std::string> thread_names_;
  absl::flat_hash_map<std::string, uint32_t> thread_name_index_;
  absl::flat_hash_map<ThreadCreation, uint32_t> names_at_creation_;
  // A deque for the reason OffCpuTracker's intervals are one: it grows by a sample at a time on
  // the drain thread.
  std::deque<std::pair<uint64_t, uint32_t>> timeline_;
  CollectorStats stats_;
  MappingObserver mapping_observer_;
  NewFramesObserver new_frames_observer_;
  AllocStackObserver alloc_stack_observer_;
  ProcessExitObserver process_exit_observer_;
  OffCpuTracker off_cpu_;
  AllocTracker alloc_;
  bool track_off_cpu_ = false;
  std::vector<uint32_t> blocked_at_start_;  // stacks OnBlockedAtStart noted
  std::array<ThreadSlot, kThreadSlots> thread_slots_{};
  std::array<ReplayedStack, kReplayedSlots> replayed_{};
  uint64_t names_generation_ = 1;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_STACK_COLLECTOR_H_
