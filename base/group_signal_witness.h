// A small process of nativeprof's own, forked into its process group, that reports every signal
// of a set the group is sent. The kernel does not tell the receiver of a kill() whether the
// sender named it or its whole process group, and nativeprof must know: a signal sent to the
// group reached the profiled command too (it is in that group) and must not be forwarded a
// second time, while one sent to nativeprof alone must be. The witness receives only what is
// sent to the group (or to it by pid, which nobody does), so its reports answer the question.
// It reads the signals from a signalfd (they stay blocked in it, as SignalReader blocks them in
// nativeprof), writes (number, sender) to a socket, and ends with nativeprof (PR_SET_PDEATHSIG)
// or when this object is destroyed.
//
// A witness that has not run yet (a loaded machine) has not reported a group signal that
// nativeprof already has. Asked (GroupWasSent with a wait), it answers once it has read every
// signal pending in it: the kernel queues a group signal on every member within the one kill(),
// so a group signal that reached nativeprof before it asked is in the answer however late the
// witness runs.
#ifndef NATIVEPROF_BASE_GROUP_SIGNAL_WITNESS_H_
#define NATIVEPROF_BASE_GROUP_SIGNAL_WITNESS_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/scoped_fd.h"

namespace nativeprof {

class GroupSignalWitness {
 public:
  // The witness's name (comm) and command line: nothing that `pkill -f 'nativeprof record'`,
  // `killall nativeprof` or `pgrep -n nativeprof` can match. With nativeprof's own, which a
  // forked child keeps, they signalled the witness too, or alone: nativeprof then took a signal
  // sent to it by name for one sent to its group, which the command has, and forwarded nothing.
  static constexpr char kProcessName[] = "np-sigwitness";

  // Forks the witness. `signals` must be blocked in the calling thread (SignalReader::Create
  // does that), so that none arriving meanwhile kills the witness, which inherits the mask.
  // Call it before the process starts threads: the child runs async-signal-safe code only,
  // but a fork of a small single-threaded process is also the cheapest. Errors: the errno
  // codes of socketpair and fork.
  static absl::StatusOr<GroupSignalWitness> Start(const sigset_t& signals);

  GroupSignalWitness(GroupSignalWitness&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        socket_(std::move(other.socket_)),
        seen_(std::move(other.seen_)),
        asked_(other.asked_),
        answered_(other.answered_) {}
  GroupSignalWitness& operator=(GroupSignalWitness&&) = delete;
  GroupSignalWitness(const GroupSignalWitness&) = delete;
  ~GroupSignalWitness();  // kills and reaps the witness

  // Whether the group was sent signal `number` by process `sender`: as far as the witness has
  // reported by now, or, with a `wait`, as far as it answers within that when asked (see the
  // file comment). The report is consumed.
  bool GroupWasSent(int number, pid_t sender, std::chrono::milliseconds wait = {});

  pid_t pid() const { return pid_; }

 private:
  GroupSignalWitness() = default;
  // Reads every report and answer written so far.
  void ReadReports();
  // Takes the report of (number, sender) out of seen_; false when there is none.
  bool Claim(int number, pid_t sender);

  pid_t pid_ = -1;
  ScopedFd socket_;  // nativeprof's end, non-blocking
  std::vector<std::pair<int, pid_t>> seen_;
  uint32_t asked_ = 0;     // the last question's number
  uint32_t answered_ = 0;  // the last answer's
};

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_GROUP_SIGNAL_WITNESS_H_
