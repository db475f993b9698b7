#include "sampler/blocked_thread.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sampler/caller_regs.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_util.h"
#include "base/scheduling.h"
#include "sampler/record_sorter.h"

namespace nativeprof::sampler {
namespace {

std::string TaskFile(pid_t pid, pid_t tid, const char* name) {
  return absl::StrCat("/proc/", pid, "/task/", tid, "/", name);
}

// The thread's schedstat: its time on a CPU and the number of times it was given one.
absl::StatusOr<SchedStat> TaskSchedStat(pid_t pid, pid_t tid) {
  absl::StatusOr<std::string> text = ReadSmallFile(TaskFile(pid, tid, "schedstat"));
  if (!text.ok()) return text.status();
  return ParseSchedStat(*text);
}


const ProcMapsEntry* MappingOf(const std::vector<ProcMapsEntry>& maps, uint64_t avma) {
  auto it = std::upper_bound(maps.begin(), maps.end(), avma,
                             [](uint64_t a, const ProcMapsEntry& m) { return a < m.start_avma; });
  if (it == maps.begin()) return nullptr;
  --it;
  return avma < it->end_avma ? &*it : nullptr;
}

bool IsCode(const std::vector<ProcMapsEntry>& maps, uint64_t avma) {
  const ProcMapsEntry* m = MappingOf(maps, avma);
  return m != nullptr && (m->prot & PROT_EXEC) != 0;
}

}  // namespace

absl::StatusOr<char> TaskState(pid_t pid, pid_t tid) {
  absl::StatusOr<std::string> text = ReadSmallFile(TaskFile(pid, tid, "stat"));
  if (!text.ok()) return text.status();
  const std::vector<absl::string_view> fields = ProcStatFieldsAfterComm(*text);
  return fields.empty() || fields[0].size() != 1 ? '?' : fields[0][0];
}

std::optional<SyscallState> ParseProcSyscall(absl::string_view text) {
  std::vector<absl::string_view> f =
      absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipWhitespace());
  // "NR ARG1 .. ARG6 SP PC"; "-1 SP PC" and "running" are not in a system call.
  const bool outside = f.size() == 3 && f[0] == "-1";
  if (f.size() != 9 && !outside) return std::nullopt;
  SyscallState s;
  if (outside) {
    s.number = -1;
  } else if (!absl::SimpleAtoi(f[0], &s.number) || s.number < 0) {
    return std::nullopt;
  }
  // SimpleHexAtoi takes the "0x" prefix itself.
  if (!absl::SimpleHexAtoi(f[f.size() - 2], &s.sp) || !absl::SimpleHexAtoi(f.back(), &s.pc) ||
      s.sp == 0 || s.pc == 0) {
    return std::nullopt;
  }
  return s;
}

std::vector<KernelFrameName> ParseProcStack(absl::string_view text) {
  std::vector<KernelFrameName> frames;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    // "[<ffffffff8142e9c5>] hrtimer_nanosleep+0xb5/0x130 [module]"; the address may read 0.
    if (!absl::ConsumePrefix(&line, "[<")) continue;
    const size_t close = line.find(">] ");
    if (close == absl::string_view::npos) continue;
    KernelFrameName f;
    if (!absl::SimpleHexAtoi(line.substr(0, close), &f.avma)) continue;
    line.remove_prefix(close + 3);
    line = line.substr(0, line.find(' '));  // the module, when there is one
    const size_t plus = line.rfind('+');
    const size_t slash = line.rfind('/');
    if (plus == absl::string_view::npos || plus == 0 || slash == absl::string_view::npos ||
        slash < plus || !absl::SimpleHexAtoi(line.substr(plus + 1, slash - plus - 1), &f.offset)) {
      continue;
    }
    f.function = std::string(line.substr(0, plus));
    frames.push_back(std::move(f));
  }
  return frames;
}

std::vector<uint64_t> FramePointerGuesses(std::span<const uint8_t> stack, uint64_t sp,
                                          const std::vector<ProcMapsEntry>& maps) {
  std::vector<uint64_t> guesses;
  if (stack.size() > ~uint64_t{0} - sp) return guesses;  // no such stack: user space ends below
  const uint64_t end = sp + stack.size();
  // Every address here comes from the target's stack: bounds are checked without sums that
  // could wrap.
  auto word = [&](uint64_t at, uint64_t* out) {
    if (at < sp || at - sp > stack.size() || stack.size() - (at - sp) < 8) return false;
    std::memcpy(out, stack.data() + (at - sp), 8);
    return true;
  };
  auto below_code = [&](uint64_t at) {
    uint64_t ra;
    return word(at + 8, &ra) && IsCode(maps, ra);
  };
  // The outermost record (saved rbp 0) is a weaker sign than a chain: a frame without frame
  // pointers often holds a zero (a local, a saved register) right below a return address, as
  // __nanosleep's does below its caller's. Weaker still is any word below a return address.
  // Up to a third of the guesses of each kind, so a stack with many stray chains still has
  // room for the others.
  constexpr size_t kPerKind = kMaxFramePointerGuesses / 3;
  std::vector<uint64_t> outermost, loose;
  const uint64_t first = (sp + 7) & ~uint64_t{7};
  for (uint64_t p = first; p >= sp && end - p >= 16; p += 8) {
    if (!below_code(p)) continue;
    uint64_t next = 0;
    if (!word(p, &next)) continue;
    std::vector<uint64_t>* kind = &loose;
    if (next == 0) {
      kind = &outermost;
    } else if (next > p && (next & 7) == 0 &&
               (next >= end || end - next < 16 || (next < end - 8 && below_code(next)))) {
      // It links to another record (whose own saved rbp may be anything: code without frame
      // pointers uses rbp freely), or it leads past the copy: a chain.
      kind = &guesses;
    }
    if (kind->size() < kPerKind) kind->push_back(p);
    if (guesses.size() == kPerKind && outermost.size() == kPerKind && loose.size() == kPerKind) {
      break;
    }
  }
  guesses.insert(guesses.end(), outermost.begin(), outermost.end());
  guesses.insert(guesses.end(), loose.begin(), loose.end());
  return guesses;
}

absl::StatusOr<std::optional<BlockedThread>> SnapshotBlockedThread(
    pid_t pid, pid_t tid, size_t stack_bytes, const std::vector<ProcMapsEntry>& maps,
    bool kernel_frames) {
  BlockedThread t;
  t.pid = static_cast<uint32_t>(pid);
  t.tid = static_cast<uint32_t>(tid);
  absl::StatusOr<SchedStat> before = TaskSchedStat(pid, tid);
  if (!before.ok()) return before.status();
  absl::StatusOr<char> state = TaskState(pid, tid);
  if (!state.ok()) return state.status();
  const bool stopped = *state == 'T' || *state == 't';
  if (*state != 'S' && *state != 'D' && !stopped) return std::nullopt;
  absl::StatusOr<std::string> text = ReadSmallFile(TaskFile(pid, tid, "syscall"));
  if (!text.ok()) return text.status();
  const std::optional<SyscallState> call = ParseProcSyscall(*text);
  // Outside a system call only a stopped thread stays put: its registers are where it stopped.
  if (!call.has_value() || (call->number < 0 && !stopped)) return std::nullopt;
  t.ip = call->pc;
  t.sp = call->sp;
  t.stack_requested = stack_bytes;
  // Never past the end of the mapping sp is on: process_vm_readv would stop there anyway.
  const ProcMapsEntry* stack_map = MappingOf(maps, t.sp);
  if (stack_map != nullptr) {
    t.stack.resize(std::min<uint64_t>(stack_bytes, stack_map->end_avma - t.sp));
    iovec local{t.stack.data(), t.stack.size()};
    iovec remote{reinterpret_cast<void*>(t.sp), t.stack.size()};
    const ssize_t n = t.stack.empty() ? 0 : ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    t.stack.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  if (t.stack.empty()) return std::nullopt;  // nothing to unwind: better no stack than a guess
  if (kernel_frames) {
    // Unreadable without CAP_SYS_ADMIN: the user frames alone then, as for a switch sample
    // whose kernel chain is not allowed.
    absl::StatusOr<std::string> stack = ReadSmallFile(TaskFile(pid, tid, "stack"));
    if (stack.ok()) t.kernel_frames = ParseProcStack(*stack);
  }
  // The run time is only brought up to date at a tick or a switch-out; the count of times the
  // thread got a CPU goes up at every switch-in.
  absl::StatusOr<SchedStat> after = TaskSchedStat(pid, tid);
  if (!after.ok()) return after.status();
  if (after->timeslices != before->timeslices || after->on_cpu_ns != before->on_cpu_ns) {
    return std::nullopt;  // it ran: the copy may be of two states
  }
  t.read_ns = MonotonicNowNs();
  t.timeslices = after->timeslices;
  t.bp_guesses = FramePointerGuesses(t.stack, t.sp, maps);
  return t;
}

bool ThreadRanSince(const BlockedThread& t) {
  absl::StatusOr<SchedStat> now =
      TaskSchedStat(static_cast<pid_t>(t.pid), static_cast<pid_t>(t.tid));
  return !now.ok() || now->timeslices != t.timeslices;
}

SampleView BlockedThreadSample(const BlockedThread& t, uint64_t bp, uint64_t regs_mask,
                               std::span<const uint64_t> kernel_avmas,
                               std::vector<uint64_t>* regs, std::vector<uint64_t>* callchain) {
  CallerRegsLayout(regs_mask).Fill(t.ip, t.sp, bp, regs);
  callchain->clear();
  for (const uint64_t avma : kernel_avmas) {
    if (avma == 0) break;  // a frame that could not be placed: the chain ends above it
    if (callchain->empty()) {
      callchain->push_back(static_cast<uint64_t>(PERF_CONTEXT_KERNEL));
      // Every address /proc shows is a return address, but a chain's first entry is taken as
      // the interrupted instruction: the call's own byte names the calling line.
      callchain->push_back(avma - 1);
    } else {
      callchain->push_back(avma);
    }
  }
  SampleView s;
  s.event = SampleEvent::kContextSwitch;
  s.pid = t.pid;
  s.tid = t.tid;
  s.time_ns = t.read_ns;
  s.period = 1;
  s.ip = t.ip;
  s.regs_abi = PERF_SAMPLE_REGS_ABI_64;
  s.regs_user = *regs;
  s.stack_user = t.stack;
  s.stack_user_requested = t.stack_requested;
  s.callchain = *callchain;
  return s;
}

}  // namespace nativeprof::sampler
