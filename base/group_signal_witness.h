// A small process of nativeprof's own, forked into its process group, that reports every signal
// of a set the group is sent. The kernel does not tell the receiver of a kill() whether the
// sender named it or its whole process group, and nativeprof must know: a signal sent to the
// group reached the profiled command too (it is in that group) and must not be forwarded a
// second time, while one sent to nativeprof alone must be. The witness receives only what is
// sent to the group (or to it by pid, which nobody does), so its reports answer the question.
// It reads the signals with sigwaitinfo (they stay blocked in it, as SignalReader blocks them in
// nativeprof), writes (number, sender) to a pipe, and ends with nativeprof (PR_SET_PDEATHSIG) or
// when this object is destroyed.
#ifndef NATIVEPROF_BASE_GROUP_SIGNAL_WITNESS_H_
#define NATIVEPROF_BASE_GROUP_SIGNAL_WITNESS_H_

#include <signal.h>
#include <sys/types.h>

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/scoped_fd.h"

namespace nativeprof {

class GroupSignalWitness {
 public:
  // Forks the witness. `signals` must be blocked in the calling thread (SignalReader::Create
  // does that), so that none arriving meanwhile kills the witness, which inherits the mask.
  // Call it before the process starts threads: the child runs async-signal-safe code only,
  // but a fork of a small single-threaded process is also the cheapest. Errors: the errno
  // codes of pipe2 and fork.
  static absl::StatusOr<GroupSignalWitness> Start(const sigset_t& signals);

  GroupSignalWitness(GroupSignalWitness&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        reports_(std::move(other.reports_)),
        seen_(std::move(other.seen_)) {}
  GroupSignalWitness& operator=(GroupSignalWitness&&) = delete;
  GroupSignalWitness(const GroupSignalWitness&) = delete;
  ~GroupSignalWitness();  // kills and reaps the witness

  // Whether the group was sent signal `number` by process `sender`, as far as the witness has
  // reported by now; the report is consumed.
  bool GroupWasSent(int number, pid_t sender);

  pid_t pid() const { return pid_; }

 private:
  GroupSignalWitness() = default;
  // Reads every report written so far into seen_.
  void ReadReports();

  pid_t pid_ = -1;
  ScopedFd reports_;  // the pipe's read end, non-blocking
  std::vector<std::pair<int, pid_t>> seen_;
};

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_GROUP_SIGNAL_WITNESS_H_
