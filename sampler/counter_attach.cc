#include "sampler/counter_attach.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sampler/proc_maps.h"

namespace nativeprof::sampler {

absl::StatusOr<AttachedCounters> AttachedCounters::Open(const std::vector<EventSpec>& events,
                                                        pid_t pid, bool per_thread) {
  NP_ASSIGN_OR_RETURN(std::vector<pid_t> tids, ListThreads(pid));
  // The main thread first: it is the one whose disappearance means the process is gone. Unless
  // it has ended already (pthread_exit) while other threads run: no event can be opened on a
  // zombie, and the process is alive all the same.
  auto main = std::find(tids.begin(), tids.end(), pid);
  if (main != tids.end() && tids.size() > 1 && ThreadHasEnded(pid, pid)) {
    tids.erase(main);
  } else if (main != tids.end()) {
    std::rotate(tids.begin(), main, main + 1);
  }
  CounterOptions options;
  options.enable_on_exec = false;
  options.per_thread = per_thread;
  absl::StatusOr<CounterSet> set = CounterSet::Open(events, tids, options);
  if (!set.ok()) {
    if (absl::IsPermissionDenied(set.status())) {
      return absl::PermissionDeniedError(absl::StrCat(
          set.status().message(),
          "; counting a process you did not start also needs permission to ptrace it"));
    }
    return set.status();
  }
  // Names matter only for the per-thread table; reading /proc/PID/task/TID/comm of every thread
  // of a large process otherwise just delays the start of sampling.
  if (per_thread) {
    std::vector<std::string> comms;
    for (pid_t tid : set->tids()) {
      absl::StatusOr<std::string> comm = ReadThreadComm(pid, tid);
      comms.push_back(comm.ok() ? *std::move(comm) : "");
    }
    set->NameTasks(comms);
  }
  return AttachedCounters(*std::move(set));
}

absl::Status AttachedCounters::Disable() { return set_->Disable(); }

absl::StatusOr<std::vector<CounterValue>> AttachedCounters::Read() const { return set_->Read(); }

absl::StatusOr<std::vector<ThreadCounters>> AttachedCounters::ReadPerThread() {
  return set_->ReadPerThread();
}

}  // namespace nativeprof::sampler
