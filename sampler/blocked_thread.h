// A thread of an attached process that is blocked in a system call when --off-cpu recording
// starts. No switch-out happens while recording for the interval it is already in, so no switch
// sample gives that interval a stack; this reads the thread's stack the way a switch sample
// would have seen it: the system call's pc and sp from /proc/PID/task/TID/syscall and a copy of
// the stack above sp (process_vm_readv), checked against the thread's run time before and after
// (schedstat) so a thread that ran in between is not described by a stale copy. Main thread.
#ifndef NATIVEPROF_SAMPLER_BLOCKED_THREAD_H_
#define NATIVEPROF_SAMPLER_BLOCKED_THREAD_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sampler/proc_maps.h"
#include "sampler/records.h"

namespace nativeprof::sampler {

// A kernel frame as /proc/PID/task/TID/stack shows it: "[<ADDR>] FUNCTION+0xOFF/0xSIZE". The
// address reads as 0 unless kptr_restrict allows it, so the name and offset are what is kept.
struct KernelFrameName {
  std::string function;
  uint64_t offset = 0;  // of the return address, from the function's start
  uint64_t avma = 0;    // when the kernel showed it; 0 when hidden
};

// Parses /proc/PID/task/TID/stack, innermost frame first; lines that do not parse are skipped.
std::vector<KernelFrameName> ParseProcStack(absl::string_view text);

struct BlockedThread {
  uint32_t pid = 0;
  uint32_t tid = 0;
  // CLOCK_MONOTONIC once the snapshot was complete. The thread did not run while it was read,
  // so an interval it is still in after this time is the one the snapshot describes.
  uint64_t read_ns = 0;
  // The times it had been given a CPU then (schedstat): ThreadRanSince tells from it whether the
  // snapshot still holds.
  uint64_t timeslices = 0;
  uint64_t ip = 0;  // in the system call's wrapper
  uint64_t sp = 0;
  // /proc does not show rbp: the places it may point to (FramePointerGuesses), most likely
  // first. Whoever unwinds the snapshot tries them in turn (a wrong one only matters to a frame
  // whose CFA is rbp-based, which then fails to unwind); none: rbp is taken as 0.
  std::vector<uint64_t> bp_guesses;
  std::vector<uint8_t> stack;  // from sp up, at most the size asked for
  uint64_t stack_requested = 0;  // the size asked for (a copy this long may be truncated)
  // The kernel's frames of the call that blocked, innermost first, when they were asked for and
  // /proc/PID/task/TID/stack could be read (it needs CAP_SYS_ADMIN). The kernel leaves out the
  // scheduler's own functions there (schedule and the other __sched ones, such as do_nanosleep)
  // that a switch sample's chain starts with: the stack begins at the function that called them.
  std::vector<KernelFrameName> kernel_frames;
};

// Thread `tid`'s state letter in /proc/PID/task/TID/stat: 'S' (sleeping) and 'D'
// (uninterruptible) are blocked, 'T' (stopped by a signal) and 't' (by its tracer) stopped, 'Z'
// a zombie (exited, not yet reaped), 'R' running or runnable; '?' for text it cannot read.
absl::StatusOr<char> TaskState(pid_t pid, pid_t tid);

// Parses /proc/PID/task/TID/syscall: "NR ARG1..ARG6 SP PC" for a thread blocked in a system call,
// "-1 SP PC" (number -1) for one off a CPU outside any (a stopped thread in its own code).
// nullopt for "running" and for bad text.
struct SyscallState {
  int64_t number = 0;  // -1: not in a system call
  uint64_t sp = 0;
  uint64_t pc = 0;
};
std::optional<SyscallState> ParseProcSyscall(absl::string_view text);

// Where rbp may point in a stack copy that starts at `sp`, most likely first (at most
// kMaxFramePointerGuesses, a third of each kind): frame-pointer code keeps it at a frame record,
// [saved rbp][return address]. First the records that link to another record (or past the
// copy), lowest first; then those whose saved rbp is 0 (the outermost, but also any zero word
// below a return address); then any word below a return address (the outermost frame-pointer
// function of a thread whose caller has none saved a meaningless rbp). `maps` tells code (an
// executable mapping) from data.
inline constexpr size_t kMaxFramePointerGuesses = 24;
std::vector<uint64_t> FramePointerGuesses(std::span<const uint8_t> stack, uint64_t sp,
                                          const std::vector<ProcMapsEntry>& maps);

// The snapshot of thread `tid` (with its kernel frames when `kernel_frames`), or nullopt when it
// is neither blocked in a system call nor stopped (SIGSTOP, a debugger: its registers then hold
// even where it stopped in its own code), but running or runnable, or it ran while being read,
// or its stack could not be copied. Errors for a
// thread that is gone or whose files this process may not read (/proc/PID/task/TID/syscall and
// process_vm_readv need ptrace-attach rights, which perf_event_open does not); callers treat
// them as "no snapshot".
absl::StatusOr<std::optional<BlockedThread>> SnapshotBlockedThread(
    pid_t pid, pid_t tid, size_t stack_bytes, const std::vector<ProcMapsEntry>& maps,
    bool kernel_frames);

// Whether thread `t` has been given a CPU since its snapshot was read (a switch-in counts in its
// schedstat), which makes the snapshot stale; true too for a thread that is gone.
bool ThreadRanSince(const BlockedThread& t);

// A context-switch sample of `t`, with rbp = `bp`, in the session's layout (`regs_mask`:
// attr.sample_regs_user), for StackCollector::OnBlockedAtStart. `kernel_avmas` are the addresses
// of t.kernel_frames (innermost first; a 0 ends the chain there) and become its kernel
// callchain. Views `t`, `regs` and `callchain`, which must outlive it.
SampleView BlockedThreadSample(const BlockedThread& t, uint64_t bp, uint64_t regs_mask,
                               std::span<const uint64_t> kernel_avmas,
                               std::vector<uint64_t>* regs, std::vector<uint64_t>* callchain);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_BLOCKED_THREAD_H_
