// Per-thread breakdown of inherited counting events. With attr.inherit_stat the kernel writes a
// PERF_RECORD_READ (pid, tid, value, enabled, running, id) for every inherited thread or child
// process when it exits, into the parent event's ring buffer; COMM and FORK records give thread
// names. CounterSideband is the pure state machine fed with those records (unit-testable with
// synthetic bytes); CounterRing maps the ring and drains it. Both are used by CounterSet on the
// thread that owns it.
#ifndef NATIVEPROF_SAMPLER_COUNTER_THREADS_H_
#define NATIVEPROF_SAMPLER_COUNTER_THREADS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "sampler/counter_value.h"
#include "sampler/event_spec.h"

namespace nativeprof::sampler {

// Counters of one task (thread, or the main thread of a child process).
struct ThreadCounters {
  pid_t pid = -1;
  pid_t tid = -1;
  std::string comm;
  std::vector<CounterValue> values;  // one per CounterSet event, same order
};

class CounterSideband {
 public:
  // `ids[i]` is the kernel id (PERF_EVENT_IOC_ID) of `events[i]`; 0 for events not opened.
  CounterSideband(std::vector<EventSpec> events, std::vector<uint64_t> ids);

  // Consumes one whole record, header included. Unknown or short records are counted in
  // malformed() and otherwise ignored (the bytes come from the kernel, but a bug must not crash).
  void OnRecord(std::span<const uint8_t> record);

  uint64_t lost() const { return lost_; }
  uint64_t malformed() const { return malformed_; }

  // The per-task table. Tasks that exited came with their own READ records; the rest of each
  // total (the main thread `main_tid` plus anything still alive at read time) is attributed to
  // the main thread, so the rows add up to `totals`. Sorted by pid, then tid; main thread first.
  std::vector<ThreadCounters> Build(const std::vector<CounterValue>& totals, pid_t main_tid,
                                    const std::string& main_comm) const;

 private:
  struct Task {
    pid_t pid = -1;
    std::string comm;
    // Event index -> values from that event's READ record.
    std::map<size_t, ReadFormatValues> reads;
  };
  std::vector<EventSpec> events_;
  absl::flat_hash_map<uint64_t, size_t> index_by_id_;
  absl::flat_hash_map<pid_t, std::string> comm_by_tid_;
  std::map<pid_t, Task> exited_;  // by tid
  uint64_t lost_ = 0;
  uint64_t malformed_ = 0;
};

// The mmap'd ring buffer one counting fd owns (the others are redirected into it with
// PERF_EVENT_IOC_SET_OUTPUT).
class CounterRing {
 public:
  // Maps 1 + `data_pages` pages of `fd` (data_pages a power of two).
  // Errors: kInvalidArgument (data_pages), the mmap errno's code.
  static absl::StatusOr<CounterRing> Map(int fd, size_t data_pages);

  // Feeds every complete record in the ring to `sideband` and frees the space. Safe to call
  // while the target runs; records that wrap are reassembled in a scratch buffer.
  void Drain(CounterSideband* sideband);

 private:
  CounterRing(ScopedMmap map, size_t page_size, size_t data_size)
      : map_(std::move(map)), page_size_(page_size), data_size_(data_size) {}
  ScopedMmap map_;
  size_t page_size_ = 0;
  size_t data_size_ = 0;
  std::vector<uint8_t> scratch_;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_COUNTER_THREADS_H_
