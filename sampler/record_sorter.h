// Puts the records of several perf rings in time order before they are parsed, within one drain
// and across drains (perf's "finished round", samply's sorter.rs). Reading every ring once is
// not enough: a record can be published in one ring after a newer record of another ring was
// already read (its writer was still inside perf_output when the first ring was looked at), so
// an MMAP can arrive one drain after the sample that needs it. A record is therefore delivered
// only when no ring can still produce an older one: when it is not newer than the newest record
// the previous drain saw (every ring was read to its end since then), or, when the records carry
// CLOCK_MONOTONIC time, when it is older than the drain's start by more than any writer stays
// inside perf_output. Newer records are copied and held for the next drain; Flush() delivers
// the rest once no ring can receive more.
//
// Sampling rings are each in time order (a CPU's ring is written from that CPU only), so their
// records are merged without copying, and only the held ones are copied. Counting side-band
// rings are not (an exiting task writes its READ records into every CPU's ring), so all their
// records are copied and sorted first. One thread, the one that owns the rings; after the first
// drains have sized the buffers it allocates nothing.
#ifndef NATIVEPROF_SAMPLER_RECORD_SORTER_H_
#define NATIVEPROF_SAMPLER_RECORD_SORTER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "sampler/record_parser.h"
#include "sampler/records.h"
#include "sampler/ring_buffer.h"

namespace nativeprof::sampler {

// CLOCK_MONOTONIC now, in ns: the time base of records from events with use_clockid.
uint64_t MonotonicNowNs();

class RecordSorter {
 public:
  enum class RingOrder : uint8_t {
    kTimeOrdered,  // each ring's records are already in time order (sampling rings)
    kUnordered,    // records of one ring may be out of order (counting side band)
  };
  using Clock = uint64_t (*)();

  // `format` parses the records (one layout for every ring); `clock` is the testing seam for
  // MonotonicNowNs, used only when format.monotonic_clock.
  RecordSorter(const SampleFormat& format, RingOrder order, Clock clock = MonotonicNowNs);

  // How long a writer can take between taking a record's time and publishing it, as far as
  // ordering is concerned. The kernel writes a record with interrupts or preemption off, in
  // microseconds; a vCPU the host deschedules mid-write is the long case, and one descheduled
  // for longer than this delivers its record late (a sample unwound before a mapping it needs,
  // an off-CPU interval paired late). Every record younger than this is copied or left for the
  // next drain, which at --off-cpu's data rates (100+ MB/s of stack copies) is most of them
  // when this is 10 ms.
  static constexpr uint64_t kInFlightNs = 2'000'000;

  // One drain: reads every ring to its end, delivers to `sink` every record that no ring can
  // still precede (in time order, merged with the records held from earlier drains), and holds
  // the rest.
  void Drain(std::span<RingBuffer> rings, RecordSink& sink);

  // The last drain, for when nothing more will be written (the target exited, or sampling
  // stopped): delivers everything in the rings and everything held, in time order.
  void Flush(std::span<RingBuffer> rings, RecordSink& sink);

  // Holds a copy of `record` (8-byte sized, e.g. recovered past a ring's data_head) to be
  // delivered in time order by a later Drain or Flush.
  void Hold(std::span<const uint8_t> record);

  // Records shorter than their fields claim (ParseRecord's kDataLoss); they are skipped.
  uint64_t parse_errors() const { return parse_errors_; }
  size_t held_records() const { return arena_.held.size(); }
  // The most record bytes held at once (how much one drain's worth of holding costs).
  size_t peak_held_bytes() const { return peak_held_bytes_; }

 private:
  struct Held {
    uint64_t time = 0;
    size_t word = 0;   // offset in the arena, in u64 words
    uint32_t size = 0; // bytes
  };
  // Grows without zero-filling: every word is written by the copy that follows.
  struct UninitializedWord {
    uint64_t value;
    UninitializedWord() {}  // NOLINT: no initializer on purpose
  };
  // The buffer of held records: their bytes (u64 keeps them 8-byte aligned) and their index.
  struct Arena {
    std::vector<UninitializedWord> words;
    std::vector<Held> held;
    // Copies `record`, samples without their unused stack bytes (CompactSample).
    void Add(uint64_t time, std::span<const uint8_t> record, const SampleFormat& format);
    std::span<const uint8_t> Bytes(const Held& h) const;
    void Clear();
  };

  void Merge(std::span<RingBuffer> rings, RecordSink& sink, uint64_t limit);
  void Deliver(std::span<const uint8_t> record, RecordSink& sink);
  void SortHeld();

  SampleFormat format_;
  RingOrder order_;
  Clock clock_;
  uint64_t newest_seen_ = 0;      // the newest record time read so far
  uint64_t previous_newest_ = 0;  // newest_seen_ when the previous drain ended
  Arena arena_;               // held from earlier drains (and Hold), delivered by the next one
  Arena next_;                // filled while arena_ is being delivered; swapped in after
  bool held_sorted_ = true;
  struct RingHead {
    std::span<const uint8_t> record;  // empty: the ring has nothing more this drain
    uint64_t time = 0;
  };
  std::vector<RingHead> heads_;  // Merge's view of each ring's next record (kept for its capacity)
  uint64_t parse_errors_ = 0;
  size_t peak_held_bytes_ = 0;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_RECORD_SORTER_H_
