#include "sampler/counter_value.h"

#include <cstring>

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

absl::StatusOr<ReadFormatValues> ParseReadFormat(std::span<const uint8_t> bytes, bool with_id) {
  const size_t need = (with_id ? 4 : 3) * sizeof(uint64_t);
  if (bytes.size() < need) {
    return absl::DataLossError(
        absl::StrCat("counter read returned ", bytes.size(), " bytes, expected ", need));
  }
  uint64_t words[4] = {};
  std::memcpy(words, bytes.data(), need);
  ReadFormatValues out;
  out.value = words[0];
  out.time_enabled = words[1];
  out.time_running = words[2];
  if (with_id) out.id = words[3];
  return out;
}

}  // namespace nativeprof::sampler
