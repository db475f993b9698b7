#include "sampler/counter_value.h"

#include <linux/perf_event.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace nativeprof::sampler {

CounterValue MakeCounterValue(const EventSpec& event, uint64_t raw, uint64_t time_enabled,
                              uint64_t time_running) {
  CounterValue v;
  v.event = event;
  v.supported = true;
  v.raw = raw;
  v.time_enabled = time_enabled;
  v.time_running = time_running;
  // perf prints "<not counted>" when either time is zero: the event never got onto a counter, so
  // its 0 carries no information.
  v.counted = time_enabled > 0 && time_running > 0;
  if (!v.counted) {
    v.scaled = 0;
  } else if (time_running < time_enabled) {
    v.scaled = static_cast<double>(raw) * static_cast<double>(time_enabled) /
               static_cast<double>(time_running);
  } else {
    v.scaled = static_cast<double>(raw);
  }
  return v;
}

CounterValue UnsupportedCounterValue(const EventSpec& event, std::string reason) {
  CounterValue v;
  v.event = event;
  v.supported = false;
  v.counted = false;
  v.unsupported_reason = std::move(reason);
  return v;
}

absl::StatusOr<ReadFormatValues> ParseReadFormat(std::span<const uint8_t> bytes,
                                                 uint64_t read_format) {
  if (read_format & PERF_FORMAT_GROUP) {
    return absl::InvalidArgumentError("group reads are not parsed here");
  }
  // The kernel writes the fields in this order, each only when asked for (perf_read_one).
  ReadFormatValues out;
  std::pair<uint64_t, uint64_t*> fields[] = {
      {0, &out.value},
      {PERF_FORMAT_TOTAL_TIME_ENABLED, &out.time_enabled},
      {PERF_FORMAT_TOTAL_TIME_RUNNING, &out.time_running},
      {PERF_FORMAT_ID, &out.id},
      {PERF_FORMAT_LOST, &out.lost},
  };
  size_t need = 0;
  for (const auto& [flag, field] : fields) {
    if (flag == 0 || (read_format & flag)) need += sizeof(uint64_t);
  }
  if (bytes.size() < need) {
    return absl::DataLossError(
        absl::StrCat("counter read returned ", bytes.size(), " bytes, expected ", need));
  }
  size_t offset = 0;
  for (const auto& [flag, field] : fields) {
    if (flag != 0 && !(read_format & flag)) continue;
    std::memcpy(field, bytes.data() + offset, sizeof(uint64_t));
    offset += sizeof(uint64_t);
  }
  return out;
}

}  // namespace nativeprof::sampler
