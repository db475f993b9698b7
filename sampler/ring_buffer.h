// Reader of one perf mmap ring buffer: the metadata page followed by a power-of-two data area.
// Drain() hands out each complete record between data_tail and data_head, copying records that wrap
// around the end of the data area into a scratch buffer, and publishes the new tail only after the
// records were consumed (acquire on data_head, release on data_tail, as the kernel's
// tools/include/linux/ring_buffer.h pairs them). One thread per RingBuffer; no allocation after the
// first wrapped record of each size.
#ifndef NATIVEPROF_SAMPLER_RING_BUFFER_H_
#define NATIVEPROF_SAMPLER_RING_BUFFER_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"

namespace nativeprof::sampler {

class RingBuffer {
 public:
  // mmaps 1 + data_pages pages of `fd`. `data_pages` must be a power of two. Errors: kInvalidArgument
  // (not a power of two), kResourceExhausted (EPERM/ENOMEM from mmap: over perf_event_mlock_kb; the
  // message says the limit and the size that would fit for `buffers_in_total` buffers).
  static absl::StatusOr<RingBuffer> Map(int fd, size_t data_pages, size_t buffers_in_total);

  // Wraps memory the caller owns (tests, fuzzing): `meta` is the metadata page, `data` the data
  // area of `data_size` bytes (a power of two).
  RingBuffer(perf_event_mmap_page* meta, uint8_t* data, size_t data_size);

  RingBuffer(RingBuffer&&) = default;
  RingBuffer& operator=(RingBuffer&&) = default;

  struct DrainStats {
    uint64_t records = 0;
    uint64_t bytes = 0;
    uint64_t corrupt = 0;  // headers with an impossible size; the rest of the batch was skipped
  };

  // Cursor API, for merging several rings by time without copying:
  //   BeginRead(); while (auto r = Peek(); !r.empty()) { use(r); Advance(); } EndRead();
  // Peek's span is 8-byte aligned and valid until the next Advance/EndRead. EndRead publishes the
  // tail so the kernel can reuse the space.
  void BeginRead();
  std::span<const uint8_t> Peek();
  void Advance();
  void EndRead();

  // Calls fn(std::span<const uint8_t> record) for every complete record, in order.
  template <typename Fn>
  DrainStats Drain(Fn&& fn) {
    BeginRead();
    for (std::span<const uint8_t> r = Peek(); !r.empty(); r = Peek()) {
      fn(r);
      Advance();
    }
    EndRead();
    DrainStats s = stats_;
    stats_ = {};
    return s;
  }
  // Totals since the last Drain() or TakeStats().
  DrainStats TakeStats() {
    DrainStats s = stats_;
    stats_ = {};
    return s;
  }

  // For after every writer is done (the target exited): hands `fn` the records the kernel wrote
  // past the published data_head. Concurrent writers on several CPUs can leave a ring's nesting
  // count stuck, after which the kernel keeps writing records but never publishes data_head
  // again. Reads only the ring's first lap, where the bytes past data_head were zero until the
  // kernel wrote a record, so a record found there cannot be a stale one from an earlier lap;
  // takes a candidate only when `plausible(record)` agrees and otherwise steps to the next
  // 8-byte-aligned header. Publishes the tail past what it recovered; returns how many.
  size_t DrainUnpublished(absl::FunctionRef<bool(std::span<const uint8_t>)> plausible,
                          absl::FunctionRef<void(std::span<const uint8_t>)> fn);

  bool HasData() const {
    return __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE) != meta_->data_tail;
  }
  size_t data_size() const { return data_size_; }
  // Between BeginRead and EndRead: bytes from the next record to the data_head snapshot.
  size_t unread_bytes() const { return static_cast<size_t>(head_ - tail_); }
  // Whether the writers of this ring wait for room (the allocation preload's) rather than drop
  // records (the kernel's): a reader may then leave more records in it for later at no loss.
  bool writers_wait() const { return writers_wait_; }
  void set_writers_wait(bool wait) { writers_wait_ = wait; }

 private:
  void CopyOut(uint64_t pos, size_t len, uint8_t* dst) const;
  std::span<const uint8_t> Current() const;

  ScopedMmap mapping_;
  perf_event_mmap_page* meta_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t data_size_ = 0;
  std::vector<uint64_t> scratch_;  // u64 so wrapped records stay 8-byte aligned
  uint64_t head_ = 0;              // data_head snapshot taken by BeginRead
  uint64_t tail_ = 0;              // next record to hand out
  uint32_t current_size_ = 0;      // size of the record Peek returned, 0 if none
  bool wrapped_ = false;           // the current record was copied into scratch_
  bool writers_wait_ = false;
  DrainStats stats_;
};

inline void RingBuffer::CopyOut(uint64_t pos, size_t len, uint8_t* dst) const {
  const uint64_t offset = pos & (data_size_ - 1);
  const size_t first = std::min<uint64_t>(len, data_size_ - offset);
  std::memcpy(dst, data_ + offset, first);
  if (first < len) std::memcpy(dst + first, data_, len - first);
}

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_RING_BUFFER_H_
