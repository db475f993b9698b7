#include "base/scheduling.h"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"

namespace nativeprof {

absl::StatusOr<SchedStat> ParseSchedStat(absl::string_view text) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  SchedStat s;
  if (fields.size() < 3 || !absl::SimpleAtoi(fields[0], &s.on_cpu_ns) ||
      !absl::SimpleAtoi(fields[1], &s.run_queue_ns) ||
      !absl::SimpleAtoi(fields[2], &s.timeslices)) {
    return absl::DataLossError(absl::StrCat("malformed schedstat '", text, "'"));
  }
  return s;
}

absl::StatusOr<SchedStat> ReadThreadSchedStat() {
  absl::StatusOr<std::string> text = ReadSmallFile("/proc/thread-self/schedstat");
  if (!text.ok()) return text.status();
  return ParseSchedStat(*text);
}

std::vector<absl::string_view> ProcStatFieldsAfterComm(absl::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == absl::string_view::npos) return {};
  return absl::StrSplit(stat.substr(paren + 1), ' ', absl::SkipEmpty());
}

absl::StatusOr<double> ParseProcessAgeSeconds(absl::string_view stat, double boot_seconds_now,
                                              long ticks_per_second) {
  uint64_t start_ticks = 0;
  if (ticks_per_second > 0) {
    std::vector<absl::string_view> fields = ProcStatFieldsAfterComm(stat);
    // fields[0] is field 3 (state), so starttime (field 22) is fields[19].
    if (fields.size() > 19 && absl::SimpleAtoi(fields[19], &start_ticks)) {
      const double start = static_cast<double>(start_ticks) / static_cast<double>(ticks_per_second);
      return std::max(boot_seconds_now - start, 0.0);
    }
  }
  return absl::DataLossError("malformed /proc/PID/stat");
}

absl::StatusOr<double> ProcessAgeSeconds() {
  absl::StatusOr<std::string> stat = ReadSmallFile("/proc/self/stat");
  if (!stat.ok()) return stat.status();
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return ParseProcessAgeSeconds(*stat, static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9,
                                ::sysconf(_SC_CLK_TCK));
}

std::string PriorityBoost::Describe() const {
  switch (kind) {
    case PriorityKind::kRealtime:
      return absl::StrCat("SCHED_FIFO ", value);
    case PriorityKind::kNice:
      return absl::StrCat("nice ", value);
    case PriorityKind::kUnchanged:
      break;
  }
  return "normal";
}

SchedulerCalls SchedulerCalls::Real() {
  SchedulerCalls calls;
  calls.get_policy = [] {
    const int policy = ::sched_getscheduler(0);
    return policy < 0 ? policy : policy & ~SCHED_RESET_ON_FORK;
  };
  // Linux applies PRIO_PROCESS to a single thread when given a tid (setpriority(2), BUGS), and
  // the caller wants exactly the drain thread.
  calls.get_nice = [] {
    errno = 0;
    return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  };
  calls.set_policy = [](int policy, int priority) {
    sched_param param{};
    param.sched_priority = priority;
    return ::sched_setscheduler(0, policy, &param);
  };
  calls.set_nice = [](int nice) {
    return ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
  };
  calls.nice_floor = [] {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NICE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -20;
    // RLIMIT_NICE is 20 - nice (setrlimit(2)); 0 and 1 both mean "no lower than 19".
    return 20 - static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 40));
  };
  return calls;
}

PriorityBoost RaiseThreadPriority(const SchedulerCalls& calls, bool nice_only) {
  PriorityBoost boost;
  const int policy = calls.get_policy();
  if (policy == SCHED_FIFO || policy == SCHED_RR || policy == SCHED_DEADLINE) {
    boost.why = "already real-time";
    return boost;
  }
  // SCHED_IDLE and SCHED_BATCH were chosen by the user (chrt -i / -b): keep them.
  if (policy != SCHED_OTHER) {
    boost.why = "SCHED_IDLE or SCHED_BATCH chosen by the user";
    return boost;
  }
  const int current = calls.get_nice();
  boost.original_nice = current;
  if (!nice_only &&
      calls.set_policy(SCHED_FIFO | SCHED_RESET_ON_FORK, kBoostRealtimePriority) == 0) {
    boost.kind = PriorityKind::kRealtime;
    boost.value = kBoostRealtimePriority;
    return boost;
  }
  const std::string fifo_error = nice_only ? "not asked for" : std::strerror(errno);
  if (current <= kBoostNice) {  // the user already ran it at the lowest nice
    boost.why = absl::StrCat("already at nice ", current);
    return boost;
  }
  int target = kBoostNice;
  if (calls.set_nice(target) != 0) {
    target = calls.nice_floor();
    if (target >= current || calls.set_nice(target) != 0) {
      boost.why = absl::StrCat("SCHED_FIFO refused (", fifo_error, "), nice ", kBoostNice,
                               " refused; needs root, CAP_SYS_NICE or RLIMIT_RTPRIO/RLIMIT_NICE");
      return boost;
    }
  }
  // Setting the flag is always permitted; it makes children start at nice 0 instead of `target`.
  (void)calls.set_policy(SCHED_OTHER | SCHED_RESET_ON_FORK, 0);
  boost.kind = PriorityKind::kNice;
  boost.value = target;
  return boost;
}

}  // namespace nativeprof
