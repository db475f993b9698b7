// Names of perf events as users type them (perf's names) and their perf_event_attr type/config.
// Pure data; any thread.
#ifndef NATIVEPROF_SAMPLER_EVENT_SPEC_H_
#define NATIVEPROF_SAMPLER_EVENT_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nativeprof::sampler {

struct EventSpec {
  std::string name;   // canonical name, e.g. "cycles", "cpu-clock", "raw:0x1234"
  uint32_t type = 0;  // PERF_TYPE_*
  uint64_t config = 0;
  // True for events that only a PMU provides; these fall back to cpu-clock for sampling.
  bool hardware = false;
  // Unit of the counted value ("msec" for clocks, which count nanoseconds; "" otherwise).
  const char* unit = "";
};

// Parses one event name: perf's hardware, software and cache names (cycles, instructions,
// branches, branch-misses, cache-references, cache-misses, stalled-cycles-frontend/-backend,
// task-clock, cpu-clock, page-faults/faults, major-faults, minor-faults, context-switches/cs,
// cpu-migrations/migrations, L1-dcache-load-misses, LLC-load-misses, ...) and raw:0xNNNN.
// Errors: kInvalidArgument naming the event and listing the valid names.
absl::StatusOr<EventSpec> ParseEventSpec(absl::string_view name);

// Parses a comma-separated list. Errors as ParseEventSpec; kInvalidArgument for an empty list.
absl::StatusOr<std::vector<EventSpec>> ParseEventList(absl::string_view list);

// The names ParseEventSpec accepts, for help and error messages.
std::vector<std::string> KnownEventNames();

// The software event used when a hardware sampling event is not supported (as perf does).
EventSpec CpuClockEvent();
// No samples at all (--no-cpu): the software dummy event, which still carries the side-band
// records (mmap, comm, fork, exit) that place other samples' addresses (Linux 3.12+).
EventSpec NoSamplesEvent();
bool IsNoSamplesEvent(const EventSpec& event);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_EVENT_SPEC_H_
