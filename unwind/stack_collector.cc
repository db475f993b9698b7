#include "unwind/stack_collector.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "sampler/alloc_channel_layout.h"

namespace nativeprof::unwind {

StackCollector::StackCollector(Unwinder* unwinder, bool keep_timeline)
    : unwinder_(unwinder),
      keep_timeline_(keep_timeline),
      processes_(&modules_),
      frame_list_index_(0, FramesHash{this}, FramesEq{this}),
      stack_index_(0, StackHash{this}, StackEq{this}) {
  scratch_stack_.frames.reserve(kMaxFrames);
  probe_.frames.reserve(kMaxFrames);
}

namespace {

// CollectedFrame has no padding and `reserved_` is always 0, so a frame list can be hashed and
// compared as one block of bytes (absl hashes a long string in bulk, much faster than combining
// 30 frames field by field).
static_assert(sizeof(CollectedFrame) == 16 && std::has_unique_object_representations_v<CollectedFrame>);

absl::string_view FrameBytes(const CollectedFrame* frames, size_t count) {
  return absl::string_view(reinterpret_cast<const char*>(frames), count * sizeof(CollectedFrame));
}

}  // namespace

absl::string_view StackCollector::FrameBytesOf(uint32_t index) const {
  if (index == kProbe) return FrameBytes(probe_.frames.data(), probe_.frames.size());
  const CollectedStack& s = stacks_[index];
  return FrameBytes(frames_.data() + s.first_frame, s.frame_count);
}

size_t StackCollector::FramesHash::operator()(uint32_t index) const {
  return absl::HashOf(owner->FrameBytesOf(index));
}

bool StackCollector::FramesEq::operator()(uint32_t a, uint32_t b) const {
  return owner->FrameBytesOf(a) == owner->FrameBytesOf(b);
}

size_t StackCollector::HashOf(uint32_t index) const {
  if (index == kProbe) {
    return absl::HashOf(probe_.kind, probe_.pid, probe_.tid, probe_.thread_name,
                        FrameBytesOf(kProbe));
  }
  const CollectedStack& s = stacks_[index];
  return absl::HashOf(s.kind, s.pid, s.tid, s.thread_name, FrameBytesOf(index));
}

size_t StackCollector::StackHash::operator()(uint32_t index) const {
  return owner->HashOf(index);
}

bool StackCollector::StackEq::operator()(uint32_t a, uint32_t b) const {
  auto view = [this](uint32_t i, StackKind* kind, int32_t* pid, int32_t* tid, uint32_t* name) {
    if (i == kProbe) {
      *kind = owner->probe_.kind;
      *pid = owner->probe_.pid;
      *tid = owner->probe_.tid;
      *name = owner->probe_.thread_name;
      return absl::Span<const CollectedFrame>(owner->probe_.frames);
    }
    const CollectedStack& s = owner->stacks_[i];
    *kind = s.kind;
    *pid = s.pid;
    *tid = s.tid;
    *name = s.thread_name;
    return absl::Span<const CollectedFrame>(owner->frames_.data() + s.first_frame, s.frame_count);
  };
  StackKind ka, kb;
  int32_t pa, ta, pb, tb;
  uint32_t na, nb;
  absl::Span<const CollectedFrame> fa = view(a, &ka, &pa, &ta, &na);
  absl::Span<const CollectedFrame> fb = view(b, &kb, &pb, &tb, &nb);
  return ka == kb && pa == pb && ta == tb && na == nb && fa.size() == fb.size() &&
         (fa.empty() || std::memcmp(fa.data(), fb.data(), fa.size() * sizeof(CollectedFrame)) == 0);
}

absl::flat_hash_map<int32_t, uint64_t> StackCollector::CpuWeightByTid() const {
  absl::flat_hash_map<int32_t, uint64_t> by_tid;
  for (const CollectedStack& s : stacks_) {
    if (s.kind == StackKind::kCpu) by_tid[s.tid] += s.weight;
  }
  return by_tid;
}

uint32_t StackCollector::InternThreadName(const std::string& name) {
  auto it = thread_name_index_.find(name);
  if (it != thread_name_index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(thread_names_.size());
  thread_names_.push_back(name);
  thread_name_index_.emplace(name, id);
  return id;
}

void StackCollector::OnSample(const sampler::SampleView& sample) {
  if (sample.event == sampler::SampleEvent::kContextSwitch) {
    ++stats_.switch_samples;
    const uint32_t index = InternSample(sample, StackKind::kSwitch);
    ++stacks_[index].samples;
    off_cpu_.OnSwitchSample(stacks_[index].pid, stacks_[index].tid, sample.time_ns, index);
    return;
  }
  if (sample.event == sampler::SampleEvent::kAlloc) {
    ++stats_.alloc_samples;
    stats_.alloc_stack_bytes += sample.stack_user.size();
    const uint32_t index = InternSample(sample, StackKind::kAlloc);
    ++stacks_[index].samples;
    if (alloc_stack_observer_) {
      const bool complete = scratch_stack_.end == StackEnd::kComplete;
      alloc_stack_observer_(sample.tid, complete ? scratch_stack_.stack_high : 0);
    }
    alloc_.OnAlloc(index, sample.pid, sample.addr, sample.period, sample.time_ns);
    return;
  }
  if (sample.event == sampler::SampleEvent::kPeakMark) {
    alloc_.OnPeakMark(sample.time_ns);
    return;
  }
  if (sample.event == sampler::SampleEvent::kFree) {
    ++stats_.free_samples;
    alloc_.OnFree(sample.pid, sample.addr, (sample.period & alloc_channel::kFreeTemporary) != 0,
                  sample.time_ns);
    return;
  }
  ++stats_.samples;
  if (stats_.first_time_ns == 0 || sample.time_ns < stats_.first_time_ns) {
    stats_.first_time_ns = sample.time_ns;
  }
  if (sample.time_ns > stats_.last_time_ns) stats_.last_time_ns = sample.time_ns;
  const uint32_t index = InternSample(sample, StackKind::kCpu);
  CollectedStack& s = stacks_[index];
  ++s.samples;
  s.weight += sample.period;
  if (keep_timeline_) timeline_.emplace_back(sample.time_ns, index);
  if (track_off_cpu_) off_cpu_.OnThreadRan(s.pid, s.tid, sample.time_ns);
}

void StackCollector::OnBlockedAtStart(std::span<const sampler::SampleView> guesses) {
  if (guesses.empty()) return;
  size_t chosen = 0;
  if (guesses.size() > 1) {
    sampler::Process& process = processes_.GetOrCreate(static_cast<int32_t>(guesses[0].pid));
    const ProcessView view{process.pid, &process.address_space, &modules_};
    // A wrong rbp can also end "complete", at a stray address where the unwind info ends the
    // stack: of the complete ones, the deepest.
    size_t best_frames = 0;
    for (size_t i = 0; i < guesses.size(); ++i) {
      unwinder_->Unwind(guesses[i], view, &scratch_stack_);
      if (scratch_stack_.end == StackEnd::kComplete &&
          scratch_stack_.frames.size() > best_frames) {
        chosen = i;
        best_frames = scratch_stack_.frames.size();
      }
    }
  }
  const sampler::SampleView& sample = guesses[chosen];
  const uint32_t index = InternSample(sample, StackKind::kSwitch);
  ++stacks_[index].samples;
  off_cpu_.NoteBlockedAtStart(stacks_[index].pid, stacks_[index].tid, sample.time_ns, index);
  blocked_at_start_.push_back(index);
}

bool StackCollector::KernelFramesExtend(const CollectedStack& whole,
                                        const CollectedStack& part) const {
  const CollectedFrame* w = frames_.data() + whole.first_frame;
  const CollectedFrame* p = frames_.data() + part.first_frame;
  auto kernel_count = [](const CollectedFrame* f, uint32_t n) {
    uint32_t k = 0;
    while (k < n && f[k].module() == kKernelModule) ++k;
    return k;
  };
  const uint32_t wk = kernel_count(w, whole.frame_count);
  const uint32_t pk = kernel_count(p, part.frame_count);
  if (wk <= pk || whole.frame_count - wk != part.frame_count - pk) return false;
  if (!std::equal(w + wk, w + whole.frame_count, p + pk)) return false;
  uint32_t matched = 0;
  for (uint32_t i = 0; i < wk && matched < pk; ++i) {
    if (w[i] == p[matched]) ++matched;
  }
  return matched == pk;
}

void StackCollector::ForgetBlockedAtStart(int32_t pid, int32_t tid) {
  for (auto it = blocked_at_start_.begin(); it != blocked_at_start_.end(); ++it) {
    CollectedStack& s = stacks_[*it];
    if (s.pid != pid || s.tid != tid) continue;
    --s.samples;
    off_cpu_.NoteBlockedAtStart(pid, tid, 0, kNoSampledStack);
    blocked_at_start_.erase(it);
    return;
  }
}

void StackCollector::CompleteBlockedAtStartStacks() {
  for (const uint32_t part : blocked_at_start_) {
    const CollectedStack& p = stacks_[part];
    uint32_t best = kNoSampledStack;
    for (uint32_t i = 0; i < stacks_.size(); ++i) {
      const CollectedStack& s = stacks_[i];
      if (i == part || s.kind != StackKind::kSwitch || s.pid != p.pid || s.tid != p.tid ||
          s.thread_name != p.thread_name || !KernelFramesExtend(s, p)) {
        continue;
      }
      if (best == kNoSampledStack || s.samples > stacks_[best].samples) best = i;
    }
    if (best == kNoSampledStack) continue;
    off_cpu_.ReplaceStack(part, best);
    // The snapshot counted as one switch-out: it is the other stack's now.
    --stacks_[part].samples;
    ++stacks_[best].samples;
  }
  blocked_at_start_.clear();
}

uint32_t StackCollector::InternSample(const sampler::SampleView& sample, StackKind kind) {
  const int32_t pid = static_cast<int32_t>(sample.pid);
  const int32_t tid = static_cast<int32_t>(sample.tid);
  ThreadSlot& slot = thread_slots_[static_cast<uint32_t>(tid) % kThreadSlots];
  if (slot.generation != names_generation_ || slot.pid != pid || slot.tid != tid) {
    sampler::Process& p = processes_.GetOrCreate(pid);
    processes_.NoteThread(tid);
    slot.pid = pid;
    slot.tid = tid;
    slot.process = &p;
    slot.thread_name = InternThreadName(processes_.ThreadName(p, tid));
    slot.generation = names_generation_;
  }
  sampler::Process& process = *slot.process;
  ProcessView view{process.pid, &process.address_space, &modules_};
  unwinder_->Unwind(sample, view, &scratch_stack_);
  ++stats_.ends[static_cast<size_t>(scratch_stack_.end)];
  if (scratch_stack_.end == StackEnd::kTruncatedStack) {
    if (kind == StackKind::kSwitch) {
      ++(scratch_stack_.spliced ? stats_.switch_spliced : stats_.truncated_switch);
    } else if (kind == StackKind::kCpu &&
               // The size asked for is whole words; a copy is short by more than the rounding.
               sample.stack_user.size() + 8 < sample.stack_user_requested) {
      ++stats_.truncated_short_copy;
    }
  }
  if (scratch_stack_.spliced) ++stats_.spliced;
  // The thread's name is part of a stack's identity: names_generation_ covers a rename.
  ReplayedStack* replayed = nullptr;
  if (const uint64_t entry = scratch_stack_.replayed_from; entry != 0) {
    replayed = &replayed_[entry % kReplayedSlots];
    if (replayed->entry == entry && replayed->names_generation == names_generation_ &&
        replayed->pid == process.pid && replayed->tid == tid && replayed->kind == kind) {
      stats_.frames += replayed->frames;
      stats_.unmapped_frames += replayed->unmapped_frames;
      return replayed->index;
    }
  }
  const uint64_t unmapped_before = stats_.unmapped_frames;

  probe_.kind = kind;
  probe_.pid = process.pid;
  probe_.tid = tid;
  probe_.thread_name = slot.thread_name;
  probe_.frames.clear();
  for (const Frame& f : scratch_stack_.frames) {
    CollectedFrame cf;
    const uint64_t lookup = LookupAvma(f);
    if (f.kernel) {
      cf = CollectedFrame::Kernel(lookup);
      ++stats_.kernel_frames;
    } else if (const sampler::Mapping* m = process.address_space.Find(lookup)) {
      cf = CollectedFrame::InModule(m->module, m->FileOffset(lookup));
    } else {
      cf = CollectedFrame::Unmapped(lookup);
      ++stats_.unmapped_frames;
    }
    probe_.frames.push_back(cf);
  }
  stats_.frames += probe_.frames.size();

  uint32_t index;
  auto it = stack_index_.find(kProbe);
  if (it != stack_index_.end()) {
    index = *it;
  } else {
    index = static_cast<uint32_t>(stacks_.size());
    auto list = frame_list_index_.find(kProbe);
    const bool new_list = list == frame_list_index_.end();
    CollectedStack s;
    s.kind = probe_.kind;
    s.pid = probe_.pid;
    s.tid = probe_.tid;
    s.thread_name = probe_.thread_name;
    s.first_frame = new_list ? static_cast<uint32_t>(frames_.size()) : stacks_[*list].first_frame;
    s.frame_count = static_cast<uint32_t>(probe_.frames.size());
    stacks_.push_back(s);
    if (new_list) {
      frames_.insert(frames_.end(), probe_.frames.begin(), probe_.frames.end());
      frame_list_index_.insert(index);
      if (new_frames_observer_) new_frames_observer_(probe_.frames);
    }
    stack_index_.insert(index);
  }
  if (replayed != nullptr) {
    *replayed = {.entry = scratch_stack_.replayed_from,
                 .names_generation = names_generation_,
                 .pid = process.pid,
                 .tid = tid,
                 .kind = kind,
                 .index = index,
                 .frames = static_cast<uint32_t>(probe_.frames.size()),
                 .unmapped_frames = static_cast<uint32_t>(stats_.unmapped_frames - unmapped_before)};
  }
  return index;
}

void StackCollector::OnMmap(const sampler::MmapView& mmap) {
  const sampler::ModuleId module = processes_.ApplyMmap(mmap);
  if (module != sampler::kNoModule && mapping_observer_) mapping_observer_(mmap, module);
}
void StackCollector::OnComm(const sampler::CommView& comm) {
  processes_.ApplyComm(comm);
  ForgetThreads();
  // A new image has a new stack: where the old one's copies could end says nothing about it.
  if (comm.exec && alloc_stack_observer_) alloc_stack_observer_(comm.tid, 0);
  if (comm.exec) alloc_.OnImageEnded(comm.pid, comm.time_ns);
  if (comm.exec && track_off_cpu_) {
    off_cpu_.OnExec(static_cast<int32_t>(comm.pid), comm.time_ns);
  }
}
void StackCollector::OnTask(const sampler::TaskView& task) {
  processes_.ApplyTask(task);
  ForgetThreads();
  // A tid that ends, or starts again, is a thread with a stack of its own.
  if (alloc_stack_observer_) alloc_stack_observer_(task.tid, 0);
  if (!task.exit && task.pid != task.ppid) alloc_.OnProcessForked(task.pid);
  // A process ends with its main thread (as the process table counts it).
  if (task.exit && task.pid == task.tid) {
    alloc_.OnImageEnded(task.pid, task.time_ns);
    if (process_exit_observer_) process_exit_observer_(task.pid, task.time_ns);
  }
  if (!track_off_cpu_) return;
  if (task.exit) {
    off_cpu_.OnThreadExited(static_cast<int32_t>(task.tid), task.time_ns);
  } else {
    const auto pid = static_cast<int32_t>(task.pid), tid = static_cast<int32_t>(task.tid);
    names_at_creation_[ThreadCreation(tid, task.time_ns)] =
        InternThreadName(processes_.ThreadName(pid, tid));
    off_cpu_.OnThreadCreated(static_cast<int32_t>(task.pid), static_cast<int32_t>(task.tid),
                             task.time_ns);
  }
}

void StackCollector::OnSwitch(const sampler::SwitchView& sw) {
  off_cpu_.OnSwitch(static_cast<int32_t>(sw.pid), static_cast<int32_t>(sw.tid), sw.time_ns, sw.out,
                    sw.preempted);
}

void StackCollector::OnLost(const sampler::LostView& lost) {
  if (lost.samples_only) {
    stats_.lost_samples += lost.lost;
  } else {
    stats_.lost_records += lost.lost;
  }
}

void StackCollector::OnThrottle(const sampler::ThrottleView& throttle) {
  if (throttle.throttled) ++stats_.throttled;
}

}  // namespace nativeprof::unwind
