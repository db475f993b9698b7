// Throughput of the record path on synthetic 999 Hz-like frame-pointer samples: ring drain
// (with wrap-around copies), ParseRecord, and the StackCollector (unwind + resolve + intern).
// A replaced global operator new counts allocations inside the timed loop, after one warm-up
// pass has interned every distinct stack, so `allocs_per_record` shows steady-state allocation.
#include <linux/perf_event.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

// GCC pairs the replaced operator new/delete below with malloc/free and warns spuriously.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include "sampler/record_parser.h"
#include "sampler/record_sorter.h"
#include "sampler/ring_buffer.h"
#include "tests/testing/record_builder.h"
#include "unwind/callchain_unwinder.h"
#include "unwind/stack_collector.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  size_t align = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace nativeprof {
namespace {

constexpr uint32_t kPid = 4242;
constexpr int kThreads = 4;
constexpr int kDistinctStacks = 64;
constexpr int kFrames = 30;
constexpr uint64_t kAppStart = 0x400000, kAppLen = 0x100000;
constexpr uint64_t kLibStart = 0x7f1200000000, kLibLen = 0x200000;
constexpr size_t kRingSize = 512 * 1024;

sampler::SampleFormat Format() {
  sampler::SampleFormat f;
  f.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  f.sample_id_all = true;
  return f;
}

// Little-endian record writer (the test library's builders are not linked into benchmarks).
class Writer {
 public:
  explicit Writer(uint32_t type, uint16_t misc = 0) { U32(type); U16(misc); U16(0); }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> Finish() {
    while (bytes_.size() % 8) bytes_.push_back(0);
    uint16_t size = static_cast<uint16_t>(bytes_.size());
    std::memcpy(bytes_.data() + 6, &size, 2);
    return std::move(bytes_);
  }

 private:
  std::vector<uint8_t> bytes_;
};

std::vector<uint8_t> Mmap2(uint64_t start, uint64_t len, const std::string& path, uint64_t inode) {
  Writer t(PERF_RECORD_MMAP2);
  t.U32(kPid); t.U32(kPid); t.U64(start); t.U64(len); t.U64(0);
  t.U32(8); t.U32(1); t.U64(inode); t.U64(0);
  t.U32(5); t.U32(2);
  std::string padded = path;
  padded.resize((path.size() + 8) / 8 * 8, '\0');
  t.Raw(padded.data(), padded.size());
  t.U32(kPid); t.U32(kPid);  // sample_id trailer: tid, time, cpu
  t.U64(1); t.U32(0); t.U32(0);
  return t.Finish();
}

// One 1 ms tick of a 4-thread process: a user callchain of kFrames frames through the app and
// libc, drawn from kDistinctStacks shapes.
std::vector<uint8_t> Sample(int n) {
  const int shape = (n * 7) % kDistinctStacks;
  const uint32_t tid = kPid + static_cast<uint32_t>(n % kThreads);
  Writer w(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
  const uint64_t leaf = kLibStart + 0x1000 + static_cast<uint64_t>(shape) * 0x40;
  w.U64(leaf);
  w.U32(kPid); w.U32(tid);
  w.U64(1000000 + static_cast<uint64_t>(n) * 1001001);
  w.U32(static_cast<uint32_t>(n % 2)); w.U32(0);
  w.U64(1001001);
  w.U64(kFrames + 1);
  w.U64(static_cast<uint64_t>(PERF_CONTEXT_USER));
  w.U64(leaf);
  for (int i = 1; i < kFrames; ++i) {
    const bool in_lib = i < 4;
    const uint64_t base = in_lib ? kLibStart : kAppStart;
    w.U64(base + 0x2000 + static_cast<uint64_t>((shape * 31 + i * 17) % 4096) * 0x10 + 5);
  }
  return w.Finish();
}

// A ring laid out once, replayed every iteration by rewinding data_tail/data_head. The start is
// just before the end of the data area so the first record wraps, and ~1 in 1700 wraps after.
struct Fixture {
  Fixture() : image(kRingSize, 7 * kRingSize - 96) {
    start = image.head();
    while (true) {
      std::vector<uint8_t> r = Sample(records);
      if (!image.Append(r)) break;
      ++records;
    }
    end = image.head();
  }
  void Rewind() {
    image.SetTail(start);
    image.SetHead(end);
  }
  testing::RingImage image;
  uint64_t start = 0, end = 0;
  int records = 0;
};

class NullSink : public sampler::RecordSink {
 public:
  void OnSample(const sampler::SampleView& s) override { sum += s.callchain.size() + s.ip; }
  void OnMmap(const sampler::MmapView&) override {}
  void OnComm(const sampler::CommView&) override {}
  void OnTask(const sampler::TaskView&) override {}
  void OnLost(const sampler::LostView&) override {}
  uint64_t sum = 0;
};

void Report(benchmark::State& state, uint64_t records, uint64_t allocations) {
  state.counters["records/s"] = benchmark::Counter(static_cast<double>(records),
                                                   benchmark::Counter::kIsRate);
  // Seconds per record (printed with an SI prefix, e.g. "350n" = 350 ns), from CPU time.
  state.counters["s/record"] = benchmark::Counter(
      static_cast<double>(records), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["allocs_per_record"] =
      records == 0 ? 0.0 : static_cast<double>(allocations) / static_cast<double>(records);
  state.counters["allocs"] = static_cast<double>(allocations);
}

void BM_Drain(benchmark::State& state) {
  Fixture fx;
  sampler::RingBuffer ring = fx.image.Reader();
  uint64_t records = 0, sum = 0;
  fx.Rewind();
  ring.Drain([&](std::span<const uint8_t> r) { sum += r[8]; });  // warm-up: scratch buffer
  const uint64_t allocs_before = g_allocations.load();
  for (auto _ : state) {
    fx.Rewind();
    records += ring.Drain([&](std::span<const uint8_t> r) { sum += r[8]; }).records;
  }
  benchmark::DoNotOptimize(sum);
  Report(state, records, g_allocations.load() - allocs_before);
}
BENCHMARK(BM_Drain);

void BM_DrainParse(benchmark::State& state) {
  Fixture fx;
  const sampler::SampleFormat format = Format();
  sampler::RingBuffer ring = fx.image.Reader();
  NullSink sink;
  uint64_t records = 0;
  auto pass = [&] {
    fx.Rewind();
    return ring.Drain([&](std::span<const uint8_t> r) {
      benchmark::DoNotOptimize(sampler::ParseRecord(r, format, sink));
    }).records;
  };
  pass();
  const uint64_t allocs_before = g_allocations.load();
  for (auto _ : state) records += pass();
  benchmark::DoNotOptimize(sink.sum);
  Report(state, records, g_allocations.load() - allocs_before);
}
BENCHMARK(BM_DrainParse);

// Two CPUs' rings through the RecordSorter, as Session drains them: arg 0 merges time-ordered
// sampling rings in place (the replayed times are never newer than the previous pass saw, so
// nothing is held: the steady state of a drain that runs well behind the writers); arg 1 is
// the counting side band's path, which copies and sorts every record, the upper bound of what
// holding costs.
void BM_SortedDrainParse(benchmark::State& state) {
  const bool unordered = state.range(0) == 1;
  Fixture cpu0, cpu1;
  const sampler::SampleFormat format = Format();
  std::vector<sampler::RingBuffer> rings;
  rings.push_back(cpu0.image.Reader());
  rings.push_back(cpu1.image.Reader());
  sampler::RecordSorter sorter(format, unordered ? sampler::RecordSorter::RingOrder::kUnordered
                                                 : sampler::RecordSorter::RingOrder::kTimeOrdered);
  NullSink sink;
  auto pass = [&] {
    cpu0.Rewind();
    cpu1.Rewind();
    if (unordered) {
      sorter.Flush(rings, sink);
    } else {
      sorter.Drain(rings, sink);
    }
    return static_cast<uint64_t>(cpu0.records + cpu1.records);
  };
  pass();  // warm-up: the first drain holds everything and sizes the sorter's buffers
  pass();
  const uint64_t allocs_before = g_allocations.load();
  uint64_t records = 0;
  for (auto _ : state) records += pass();
  benchmark::DoNotOptimize(sink.sum);
  Report(state, records, g_allocations.load() - allocs_before);
  state.counters["held_peak_bytes"] = static_cast<double>(sorter.peak_held_bytes());
}
BENCHMARK(BM_SortedDrainParse)->Arg(0)->Arg(1);

void BM_DrainParseCollect(benchmark::State& state) {
  Fixture fx;
  const sampler::SampleFormat format = Format();
  sampler::RingBuffer ring = fx.image.Reader();
  unwind::CallchainUnwinder unwinder;
  unwind::StackCollector collector(&unwinder, /*keep_timeline=*/false);
  for (const auto& r : {Mmap2(kAppStart, kAppLen, "/usr/bin/app", 11),
                        Mmap2(kLibStart, kLibLen, "/usr/lib/x86_64-linux-gnu/libc.so.6", 12)}) {
    if (!sampler::ParseRecord(r, format, collector).ok()) state.SkipWithError("mmap parse");
  }
  uint64_t records = 0;
  auto pass = [&] {
    fx.Rewind();
    return ring.Drain([&](std::span<const uint8_t> r) {
      benchmark::DoNotOptimize(sampler::ParseRecord(r, format, collector));
    }).records;
  };
  const uint64_t warmup_before = g_allocations.load();
  pass();  // warm-up: interns every distinct stack and thread name
  const uint64_t allocs_before = g_allocations.load();
  for (auto _ : state) records += pass();
  Report(state, records, g_allocations.load() - allocs_before);
  // Proves the counting operator new is in effect: interning the first stacks must allocate.
  state.counters["warmup_allocs"] = static_cast<double>(allocs_before - warmup_before);
  state.counters["stacks"] = static_cast<double>(collector.stacks().size());
  state.counters["unmapped_frames"] = static_cast<double>(collector.stats().unmapped_frames);
}
BENCHMARK(BM_DrainParseCollect);

}  // namespace
}  // namespace nativeprof
