// The starting state of a process nativeprof attaches to: /proc/PID/maps and the thread names
// under /proc/PID/task, turned into the same MMAP2/COMM records the kernel sends for new mappings,
// so the address-space model is complete before the first sample. Main thread.
#ifndef NATIVEPROF_SAMPLER_PROC_MAPS_H_
#define NATIVEPROF_SAMPLER_PROC_MAPS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sampler/records.h"

namespace nativeprof::sampler {

struct ProcMapsEntry {
  uint64_t start_avma = 0;
  uint64_t end_avma = 0;
  uint32_t prot = 0;  // PROT_READ | PROT_WRITE | PROT_EXEC
  bool shared = false;
  uint64_t file_offset = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  std::string path;  // may be empty, "[vdso]", "[heap]", or end in " (deleted)"

  bool operator==(const ProcMapsEntry&) const = default;
};

// Parses the text of a /proc/PID/maps file. Errors: kDataLoss naming the bad line (quoted
// escaped), also for a range whose end is not above its start.
absl::StatusOr<std::vector<ProcMapsEntry>> ParseProcMaps(absl::string_view text);

// Reads /proc/PID/maps. Errors: kNotFound (no such process), kPermissionDenied (another user's
// process without ptrace rights), kDataLoss.
absl::StatusOr<std::vector<ProcMapsEntry>> ReadProcMaps(pid_t pid);

// The thread ids under /proc/PID/task. Errors: kNotFound when the process does not exist.
absl::StatusOr<std::vector<pid_t>> ListThreads(pid_t pid);

// Whether `pid` is a kernel thread (PF_KTHREAD in /proc/PID/stat): it has no user space to
// sample. False when that cannot be read.
bool IsKernelThread(pid_t pid);

// True when no thread of process `pid` can run again: /proc has no such process, or the only
// thread it lists is the main thread and that is a zombie (a main thread that ended while others
// run is listed beside them).
bool ProcessHasEnded(pid_t pid);

// True when thread `tid` of process `pid` has ended: /proc lists it no more, or lists it as a
// zombie (a main thread that called pthread_exit while others run).
bool ThreadHasEnded(pid_t pid, pid_t tid);

// The state letter of thread `tid` of process `pid` in /proc/PID/task/TID/stat: 'R' running or
// runnable, 'S' sleeping, 'D' in uninterruptible wait, 'Z' zombie, ... Errors: those of reading
// the file (kNotFound when the thread is gone), kDataLoss when it has no state.
absl::StatusOr<char> ThreadStateLetter(pid_t pid, pid_t tid);

// The process (thread group) that thread `tid` belongs to: `tid` itself for a process's main
// thread. From the "Tgid:" line of /proc/TID/status. Errors: kNotFound when there is no such
// thread, kInvalidArgument when the file has no such line.
absl::StatusOr<pid_t> ProcessOfThread(pid_t tid);

// Process `pid`'s pid in its own (innermost) pid namespace: the last field of the "NSpid:" line
// of /proc/PID/status, `pid` itself outside containers. A container's process names files after
// this pid (a JIT's /tmp/perf-PID.map). Errors: as ProcessOfThread.
absl::StatusOr<pid_t> PidInOwnNamespace(pid_t pid);

// The name (comm) of thread `tid` of process `pid`, from /proc/PID/task/TID/comm. Errors: as
// reading the file (kNotFound when the thread is gone).
absl::StatusOr<std::string> ReadThreadComm(pid_t pid, pid_t tid);

// Feeds `sink` one COMM per thread (from /proc/PID/task/TID/comm) and one MMAP2 per executable
// mapping of `entries`, with the build-id read from the mapped file when it has one.
void SynthesizeProcessState(pid_t pid, const std::vector<ProcMapsEntry>& entries,
                            RecordSink& sink);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_PROC_MAPS_H_
