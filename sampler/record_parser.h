// Decodes one perf ring-buffer record (header included) into a view and hands it to a RecordSink.
// Pure: no I/O, no allocation; safe on arbitrary bytes (the fuzz target drives it). Any thread.
#ifndef NATIVEPROF_SAMPLER_RECORD_PARSER_H_
#define NATIVEPROF_SAMPLER_RECORD_PARSER_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/records.h"

namespace nativeprof::sampler {

// The parts of perf_event_attr that decide a record's layout.
struct SampleFormat {
  uint64_t sample_type = 0;
  uint64_t regs_user_mask = 0;
  uint64_t read_format = 0;
  bool sample_id_all = true;
  // Record times are CLOCK_MONOTONIC (attr.use_clockid), comparable with clock_gettime; else
  // the kernel's perf clock, comparable only with each other.
  bool monotonic_clock = false;

  static SampleFormat FromAttr(const perf_event_attr& attr);
};

// What ParseRecord saw, for the run's quality figures.
enum class ParseOutcome : uint8_t { kDelivered, kIgnored };

// Parses `record` (must be 8-byte aligned, as ring records are) and calls the matching sink method.
// Record types nativeprof does not use are kIgnored. Errors: kDataLoss when the record is shorter
// than its fields claim (truncated or corrupt), kInvalidArgument when `record` is misaligned.
absl::StatusOr<ParseOutcome> ParseRecord(std::span<const uint8_t> record, const SampleFormat& format,
                                         RecordSink& sink);

// The record's timestamp (PERF_SAMPLE_TIME, from the sample body or the sample_id trailer), or 0
// when it has none or is too short. Used to merge per-CPU rings in time order.
uint64_t RecordTime(std::span<const uint8_t> record, const SampleFormat& format);

// A sample's user-stack field holds as many bytes as were requested, whatever the stack used;
// only dyn_size of them are stack. For a sample that has to be copied (the record sorter holds
// it for a later drain): the record with the unused bytes cut, written to `out` (when not null),
// returning its length. The cut copy parses to the same SampleView: its size word is dyn_size
// rounded up to 8, plus 8 unless the copy was full (dyn_size == requested still means "maybe
// truncated"). Anything else, or a sample with fields after the stack, is copied whole.
size_t CompactSample(std::span<const uint8_t> record, const SampleFormat& format, uint8_t* out);

// For records found past a ring's published data_head (RingBuffer::DrainUnpublished): true
// when `record` is a whole task record (COMM, FORK, EXIT or READ) whose sample_id trailer names
// the task its body names. Two CPUs that wrote into the same space leave records that fail this.
bool IsConsistentTaskRecord(std::span<const uint8_t> record, const SampleFormat& format);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_RECORD_PARSER_H_
