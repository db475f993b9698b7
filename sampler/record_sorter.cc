#include "sampler/record_sorter.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace nativeprof::sampler {

uint64_t MonotonicNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void RecordSorter::Arena::Add(uint64_t time, std::span<const uint8_t> record,
                              const SampleFormat& format) {
  const size_t word = words.size();
  words.resize(word + (record.size() + 7) / 8);
  uint8_t* out = reinterpret_cast<uint8_t*>(words.data() + word);
  const size_t size = CompactSample(record, format, out);
  words.resize(word + (size + 7) / 8);
  held.push_back({.time = time, .word = word, .size = static_cast<uint32_t>(size)});
}

std::span<const uint8_t> RecordSorter::Arena::Bytes(const Held& h) const {
  return {reinterpret_cast<const uint8_t*>(words.data() + h.word), h.size};
}

void RecordSorter::Arena::Clear() {
  words.clear();
  held.clear();
}

RecordSorter::RecordSorter(const SampleFormat& format, RingOrder order, Clock clock)
    : format_(format), order_(order), clock_(clock) {}

void RecordSorter::Drain(std::span<RingBuffer> rings, RecordSink& sink) {
  // The clock is read before any ring is looked at: a record not yet published then was still
  // being written, so its time is at most kInFlightNs before now.
  uint64_t limit = previous_newest_;
  if (format_.monotonic_clock) {
    const uint64_t now = clock_();
    if (now > kInFlightNs) limit = std::max(limit, now - kInFlightNs);
  }
  Merge(rings, sink, limit);
}

void RecordSorter::Flush(std::span<RingBuffer> rings, RecordSink& sink) {
  Merge(rings, sink, UINT64_MAX);
}

void RecordSorter::Hold(std::span<const uint8_t> record) {
  const uint64_t time = RecordTime(record, format_);
  newest_seen_ = std::max(newest_seen_, time);
  arena_.Add(time, record, format_);
  held_sorted_ = false;
}

void RecordSorter::SortHeld() {
  if (held_sorted_) return;
  // Records with equal times stay in the order they were read: a record's place in the arena is
  // that order. (std::stable_sort would allocate a buffer on every call.)
  std::sort(arena_.held.begin(), arena_.held.end(), [](const Held& a, const Held& b) {
    return a.time != b.time ? a.time < b.time : a.word < b.word;
  });
  held_sorted_ = true;
}

void RecordSorter::Deliver(std::span<const uint8_t> record, RecordSink& sink) {
  if (!ParseRecord(record, format_, sink).ok()) ++parse_errors_;
}

void RecordSorter::Merge(std::span<RingBuffer> rings, RecordSink& sink, uint64_t limit) {
  if (order_ == RingOrder::kUnordered) {
    for (RingBuffer& ring : rings) {
      ring.BeginRead();
      for (std::span<const uint8_t> r = ring.Peek(); !r.empty(); r = ring.Peek()) {
        const uint64_t time = RecordTime(r, format_);
        newest_seen_ = std::max(newest_seen_, time);
        arena_.Add(time, r, format_);
        held_sorted_ = false;
        ring.Advance();
      }
      ring.EndRead();
    }
    rings = {};
  }
  SortHeld();
  for (RingBuffer& ring : rings) ring.BeginRead();
  // k-way merge of the rings' heads and the held records (the oldest first; held ones win ties,
  // they were read earlier). Ring records stay in the ring. With CLOCK_MONOTONIC times a
  // time-ordered ring's records past `limit` stay there too, unread, for the next drain: all
  // that follow them in their ring are newer still, and copying them (stack copies of 8 KiB
  // each) cost more than the rest of the drain - unless they fill a quarter of a kernel ring,
  // whose space the kernel then needs more than we need to save the copy (bursts of switch
  // samples). A ring whose writers wait for room loses nothing by waiting: its records stay
  // until it is half full (past that its writers, which hold the ring's lock, would stall).
  // With the perf clock `limit` only moves with the newest record seen, so every ring is read to
  // its end and what is too new is held.
  const bool leave_newer_in_rings = order_ == RingOrder::kTimeOrdered && format_.monotonic_clock;
  size_t next_held = 0;
  const std::vector<Held>& held = arena_.held;
  // Each ring's next record and its time, read again only when that ring advances: one ring
  // (the allocation ring under --alloc=1) often delivers millions of records in a row.
  heads_.resize(rings.size());
  auto read_head = [&](size_t i) {
    heads_[i].record = rings[i].Peek();
    heads_[i].time = heads_[i].record.empty() ? 0 : RecordTime(heads_[i].record, format_);
  };
  for (size_t i = 0; i < rings.size(); ++i) read_head(i);
  while (true) {
    size_t oldest = rings.size();
    for (size_t i = 0; i < rings.size(); ++i) {
      if (heads_[i].record.empty()) continue;
      if (oldest == rings.size() || heads_[i].time < heads_[oldest].time) oldest = i;
    }
    const uint64_t oldest_time = oldest < rings.size() ? heads_[oldest].time : 0;
    if (next_held < held.size() &&
        (oldest == rings.size() || held[next_held].time <= oldest_time)) {
      const Held& h = held[next_held++];
      if (h.time <= limit) {
        Deliver(arena_.Bytes(h), sink);
      } else {
        next_.Add(h.time, arena_.Bytes(h), format_);
      }
      continue;
    }
    if (oldest == rings.size()) break;
    if (leave_newer_in_rings && oldest_time > limit &&
        std::all_of(rings.begin(), rings.end(), [](const RingBuffer& ring) {
          return ring.unread_bytes() <= ring.data_size() / (ring.writers_wait() ? 2 : 4);
        })) {
      break;
    }
    newest_seen_ = std::max(newest_seen_, oldest_time);
    if (oldest_time <= limit) {
      Deliver(heads_[oldest].record, sink);
    } else {
      next_.Add(oldest_time, heads_[oldest].record, format_);
    }
    rings[oldest].Advance();
    read_head(oldest);
  }
  for (; next_held < held.size(); ++next_held) {
    next_.Add(held[next_held].time, arena_.Bytes(held[next_held]), format_);
  }
  for (RingBuffer& ring : rings) ring.EndRead();
  // What was held is in merge order, so sorted.
  peak_held_bytes_ = std::max(peak_held_bytes_, next_.words.size() * sizeof(uint64_t));
  std::swap(arena_, next_);
  next_.Clear();
  previous_newest_ = newest_seen_;
}

}  // namespace nativeprof::sampler
