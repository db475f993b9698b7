// libFuzzer target for the perf record path: ParseRecord on arbitrary bytes under a SampleFormat
// derived from the input, then the same bytes laid into a fake ring (RingImage) at an
// input-chosen position and drained record by record into the parser, into the side band of
// `stat --per-thread` (CounterSideband, fed by the parser with the side band's layout), and the
// recovery of unpublished records; then through both kinds of RecordSorter. Input layout:
//   [0..1] sample_type selector (one bit per field nativeprof uses)  [2] regs mask width
//   [3] read_format bits  [4] flags (bit 0: sample_id_all)  [5] ring position  [6..7] reserved
//   [8..] record bytes
#include <linux/perf_event.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include "sampler/counter_threads.h"
#include "sampler/event_spec.h"
#include "sampler/record_parser.h"
#include "sampler/record_sorter.h"
#include "sampler/records.h"
#include "sampler/ring_buffer.h"
#include "tests/testing/record_builder.h"

namespace {

using nativeprof::sampler::CommView;
using nativeprof::sampler::LostView;
using nativeprof::sampler::MmapView;
using nativeprof::sampler::SampleFormat;
using nativeprof::sampler::SampleView;
using nativeprof::sampler::TaskView;
using nativeprof::sampler::ThrottleView;

constexpr uint64_t kSampleBits[] = {
    PERF_SAMPLE_IP,        PERF_SAMPLE_TID,        PERF_SAMPLE_TIME,       PERF_SAMPLE_CPU,
    PERF_SAMPLE_PERIOD,    PERF_SAMPLE_CALLCHAIN,  PERF_SAMPLE_REGS_USER,  PERF_SAMPLE_STACK_USER,
    PERF_SAMPLE_READ,      PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_ID,         PERF_SAMPLE_STREAM_ID,
    PERF_SAMPLE_ADDR,      PERF_SAMPLE_RAW,
};
constexpr uint64_t kReadBits[] = {PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING,
                                  PERF_FORMAT_ID, PERF_FORMAT_GROUP, PERF_FORMAT_LOST};

// Touches every byte a view points at, so ASan sees out-of-bounds views and UBSan misaligned
// u64 spans; the sum keeps the reads from being optimised away.
class TouchingSink : public nativeprof::sampler::RecordSink {
 public:
  void OnSample(const SampleView& s) override {
    for (uint64_t v : s.callchain) sum_ += v;
    for (uint64_t v : s.regs_user) sum_ += v;
    for (uint8_t b : s.stack_user) sum_ += b;
    sum_ += s.ip + s.tid + s.time_ns + s.regs_abi;
  }
  void OnMmap(const MmapView& m) override {
    for (uint8_t b : m.build_id) sum_ += b;
    for (char c : m.filename) sum_ += static_cast<uint8_t>(c);
    sum_ += m.start_avma + m.length + m.file_offset;
  }
  void OnComm(const CommView& c) override {
    for (char ch : c.comm) sum_ += static_cast<uint8_t>(ch);
  }
  void OnTask(const TaskView& t) override { sum_ += t.pid + t.tid + t.time_ns; }
  void OnLost(const LostView& l) override { sum_ += l.lost; }
  void OnThrottle(const ThrottleView& t) override { sum_ += t.time_ns; }
  void OnRead(const nativeprof::sampler::ReadView& r) override {
    sum_ += r.value + r.time_enabled + r.time_running + r.id + r.time_ns;
  }
  void OnSwitch(const nativeprof::sampler::SwitchView& s) override {
    sum_ += s.pid + s.tid + s.time_ns + s.out + s.preempted;
  }
  uint64_t sum() const { return sum_; }

 private:
  uint64_t sum_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  SampleFormat f;
  const uint16_t selector = static_cast<uint16_t>(data[0] | (data[1] << 8));
  for (size_t i = 0; i < sizeof(kSampleBits) / sizeof(kSampleBits[0]); ++i) {
    if (selector & (1u << i)) f.sample_type |= kSampleBits[i];
  }
  const unsigned regs = data[2] % 25;  // x86-64 has 24 user registers in perf_regs
  f.regs_user_mask = regs == 0 ? 0 : (uint64_t{1} << regs) - 1;
  for (size_t i = 0; i < sizeof(kReadBits) / sizeof(kReadBits[0]); ++i) {
    if (data[3] & (1u << i)) f.read_format |= kReadBits[i];
  }
  f.sample_id_all = (data[4] & 1) != 0;
  const uint8_t position = data[5];
  data += 8;
  size -= 8;

  // 8-aligned copy, as records in a ring are.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size != 0) std::memcpy(aligned.data(), data, size);
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(aligned.data()), size);

  TouchingSink sink;
  // One counted event on one CPU, kernel id 1: READ records carrying that id are applied.
  static const std::vector<nativeprof::sampler::EventSpec> kEvents =
      *nativeprof::sampler::ParseEventList("task-clock");
  nativeprof::sampler::CounterSideband sideband(kEvents, 1, {{.event = 0, .owner = 0, .id = 1}});
  (void)nativeprof::sampler::ParseRecord(bytes, f, sink);
  (void)nativeprof::sampler::RecordTime(bytes, f);

  // The same bytes as a ring: data area the next power of two >= max(size, 64), start position
  // 8-aligned and input-chosen so records wrap the end.
  size_t ring_size = 64;
  while (ring_size < size) ring_size *= 2;
  nativeprof::testing::RingImage image(ring_size, (position * uint64_t{8}) % ring_size);
  if (!image.Append(bytes)) __builtin_trap();
  nativeprof::sampler::RingBuffer ring = image.Reader();
  uint64_t delivered_bytes = 0;
  nativeprof::sampler::RingBuffer::DrainStats stats =
      ring.Drain([&](std::span<const uint8_t> record) {
        if (reinterpret_cast<uintptr_t>(record.data()) % 8 != 0) __builtin_trap();
        delivered_bytes += record.size();
        (void)nativeprof::sampler::ParseRecord(record, f, sink);
        (void)nativeprof::sampler::RecordTime(record, f);
        (void)nativeprof::sampler::ParseRecord(
            record, nativeprof::sampler::CounterSidebandFormat(), sideband);
        (void)nativeprof::sampler::IsConsistentTaskRecord(record, f);
      });
  (void)sideband.incomplete_tasks();
  // The per-thread table splits a total over what the records said exited: any values.
  const std::vector<std::vector<nativeprof::sampler::CounterValue>> totals = {
      {nativeprof::sampler::MakeCounterValue(kEvents[0], 1000, 1000, 1000)}};
  for (const nativeprof::sampler::ThreadCounters& row : sideband.Build(totals, 1, {1})) {
    if (row.values.size() != 1) __builtin_trap();
  }
  // Invariants: everything was consumed, and the delivered bytes are what the stats say.
  if (image.tail() != image.head()) __builtin_trap();
  if (stats.bytes != delivered_bytes || stats.bytes > size) __builtin_trap();
  if (stats.corrupt > 1) __builtin_trap();
  // The bytes as if the kernel had stopped publishing them.
  image.SetTail(image.head() - std::min<uint64_t>(image.head(), size));
  image.SetHead(image.tail());
  (void)ring.DrainUnpublished(
      [&f](std::span<const uint8_t> r) { return nativeprof::sampler::IsConsistentTaskRecord(r, f); },
      [&](std::span<const uint8_t> r) { (void)nativeprof::sampler::ParseRecord(r, f, sink); });

  // Both sorters over a fresh image of the same bytes: a drain, a record held by hand, a flush.
  using nativeprof::sampler::RecordSorter;
  for (RecordSorter::RingOrder order :
       {RecordSorter::RingOrder::kTimeOrdered, RecordSorter::RingOrder::kUnordered}) {
    nativeprof::testing::RingImage sorted_image(ring_size, (position * uint64_t{8}) % ring_size);
    if (!sorted_image.Append(bytes)) __builtin_trap();
    std::vector<nativeprof::sampler::RingBuffer> rings;
    rings.push_back(sorted_image.Reader());
    RecordSorter sorter(f, order);
    sorter.Drain(rings, sink);
    if (size >= 8 && size % 8 == 0) sorter.Hold(bytes);
    sorter.Flush(rings, sink);
    if (sorter.held_records() != 0) __builtin_trap();
    if (sorted_image.tail() != sorted_image.head()) __builtin_trap();
  }
  static volatile uint64_t keep;
  keep = sink.sum();
  return 0;
}
