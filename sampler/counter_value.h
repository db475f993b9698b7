// One counting event's value as read from the kernel, and the multiplexing scale perf applies to
// it. Pure data and pure functions shared by CounterSet (sampler), the per-thread side band and
// the report writers (output); usable from any thread.
#ifndef NATIVEPROF_SAMPLER_COUNTER_VALUE_H_
#define NATIVEPROF_SAMPLER_COUNTER_VALUE_H_

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "sampler/event_spec.h"

namespace nativeprof::sampler {

struct CounterValue {
  EventSpec event;
  // False when the kernel cannot give this event here (ENOENT, EOPNOTSUPP, ...): "<not supported>".
  bool supported = false;
  // False when the event was opened but never scheduled on a PMU (time_running == 0):
  // "<not counted>". Never report such a value as 0.
  bool counted = false;
  uint64_t raw = 0;     // the count as the kernel gave it
  double scaled = 0;    // raw * time_enabled / time_running: the estimate when multiplexed
  uint64_t time_enabled = 0;  // ns the event was enabled
  uint64_t time_running = 0;  // ns it was actually on a counter
  // Which task this value belongs to: -1 for the whole target (all threads and children).
  pid_t pid = -1;
  pid_t tid = -1;
  std::string comm;         // thread name, when known
  std::string unsupported_reason;  // errno text when !supported

  // Percentage of enabled time the event was really counted (100 unless multiplexed).
  double RunningPercent() const {
    return time_enabled == 0 ? 0.0 : 100.0 * static_cast<double>(time_running) /
                                         static_cast<double>(time_enabled);
  }
};

// Builds a counted/scaled value from the kernel's read_format triple, as perf does: not counted
// when it never ran (enabled or running time 0), scaled by enabled/running when multiplexed.
CounterValue MakeCounterValue(const EventSpec& event, uint64_t raw, uint64_t time_enabled,
                              uint64_t time_running);

// A value for an event the kernel refused as unsupported.
CounterValue UnsupportedCounterValue(const EventSpec& event, std::string reason);

// What read(2) gives for one event (non-group reads only): its value, then the fields its
// attr.read_format asks for; those it does not ask for are zero.
struct ReadFormatValues {
  uint64_t value = 0;
  uint64_t time_enabled = 0;  // PERF_FORMAT_TOTAL_TIME_ENABLED
  uint64_t time_running = 0;  // PERF_FORMAT_TOTAL_TIME_RUNNING
  uint64_t id = 0;            // PERF_FORMAT_ID
  uint64_t lost = 0;          // PERF_FORMAT_LOST (Linux 6.0+): records the event could not write
};
// Parses the bytes read(2) returned for one event opened with `read_format`. Errors: kDataLoss
// when the buffer is shorter than the layout, kInvalidArgument for PERF_FORMAT_GROUP.
absl::StatusOr<ReadFormatValues> ParseReadFormat(std::span<const uint8_t> bytes,
                                                 uint64_t read_format);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_COUNTER_VALUE_H_
