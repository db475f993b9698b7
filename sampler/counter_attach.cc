#include "sampler/counter_attach.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "sampler/proc_maps.h"

namespace nativeprof::sampler {

absl::StatusOr<AttachedCounters> AttachedCounters::Open(const std::vector<EventSpec>& events,
                                                        pid_t pid, bool per_thread) {
  NP_ASSIGN_OR_RETURN(std::vector<pid_t> tids, ListThreads(pid));
  // The main thread first: it is the one whose disappearance means the process is gone.
  auto main = std::find(tids.begin(), tids.end(), pid);
  if (main != tids.end()) std::rotate(tids.begin(), main, main + 1);
  AttachedCounters attached;
  attached.pid_ = pid;
  CounterOptions options;
  options.enable_on_exec = false;
  options.per_thread = per_thread;
  for (pid_t tid : tids) {
    absl::StatusOr<CounterSet> set = CounterSet::Open(events, tid, options);
    if (!set.ok()) {
      // A thread that exited since the listing is not an error; the process vanishing is.
      if (absl::IsNotFound(set.status()) && tid != pid) continue;
      if (absl::IsNotFound(set.status())) {
        return absl::NotFoundError(absl::StrCat("no process with PID ", pid));
      }
      if (absl::IsPermissionDenied(set.status())) {
        return absl::PermissionDeniedError(absl::StrCat(
            set.status().message(),
            "; counting a process you did not start also needs permission to ptrace it"));
      }
      return set.status();
    }
    absl::StatusOr<std::string> comm =
        ReadSmallFile(absl::StrCat("/proc/", pid, "/task/", tid, "/comm"));
    attached.comms_.push_back(
        comm.ok() ? std::string(absl::StripTrailingAsciiWhitespace(*comm)) : "");
    attached.sets_.push_back(*std::move(set));
  }
  return attached;
}

absl::Status AttachedCounters::Disable() {
  for (CounterSet& set : sets_) NP_RETURN_IF_ERROR(set.Disable());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CounterValue>> AttachedCounters::Read() const {
  std::vector<std::vector<CounterValue>> parts;
  for (const CounterSet& set : sets_) {
    NP_ASSIGN_OR_RETURN(std::vector<CounterValue> values, set.Read());
    parts.push_back(std::move(values));
  }
  return SumCounterValues(parts);
}

void AttachedCounters::Poll() {
  for (CounterSet& set : sets_) set.Poll();
}

absl::StatusOr<std::vector<ThreadCounters>> AttachedCounters::ReadPerThread() {
  std::vector<ThreadCounters> rows;
  for (size_t i = 0; i < sets_.size(); ++i) {
    NP_ASSIGN_OR_RETURN(std::vector<ThreadCounters> part, sets_[i].ReadPerThread(comms_[i]));
    if (!part.empty()) {
      // The set's own thread: CounterSet only knows its tid; the process is pid_.
      part.front().pid = pid_;
      for (CounterValue& v : part.front().values) v.pid = pid_;
    }
    for (ThreadCounters& row : part) rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<CounterValue> SumCounterValues(const std::vector<std::vector<CounterValue>>& parts) {
  if (parts.empty()) return {};
  std::vector<CounterValue> sum;
  for (const CounterValue& first : parts.front()) {
    CounterValue v;
    v.event = first.event;
    v.unsupported_reason = first.unsupported_reason;
    sum.push_back(std::move(v));
  }
  for (const std::vector<CounterValue>& part : parts) {
    for (size_t i = 0; i < part.size() && i < sum.size(); ++i) {
      const CounterValue& p = part[i];
      CounterValue& s = sum[i];
      s.supported = s.supported || p.supported;
      if (!p.supported || !p.counted) continue;
      s.counted = true;
      s.raw += p.raw;
      s.scaled += p.scaled;
      s.time_enabled += p.time_enabled;
      s.time_running += p.time_running;
    }
  }
  for (CounterValue& s : sum) {
    if (s.supported) s.unsupported_reason.clear();
  }
  return sum;
}

}  // namespace nativeprof::sampler
