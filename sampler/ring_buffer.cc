#include "sampler/ring_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"

namespace nativeprof::sampler {

absl::StatusOr<RingBuffer> RingBuffer::Map(int fd, size_t data_pages, size_t buffers_in_total) {
  if (data_pages == 0 || (data_pages & (data_pages - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring buffer size ", data_pages, " pages is not a power of two"));
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t len = (data_pages + 1) * page;
  void* addr = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) {
    int err = errno;
    if (err == ENOMEM && ::geteuid() == 0) {
      // Root (CAP_IPC_LOCK) is not bound by perf_event_mlock_kb: the kernel had no memory to
      // give that many pages.
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot map ", buffers_in_total, " ring buffers of ", data_pages, " pages (",
          std::strerror(err), "): the kernel could not allocate ",
          buffers_in_total * len / (1024 * 1024), " MiB for them; try -m ",
          std::max<size_t>(1, data_pages / 8)));
    }
    if (err == EPERM || err == ENOMEM) {
      absl::StatusOr<int64_t> mlock_kb = ReadIntegerFile("/proc/sys/kernel/perf_event_mlock_kb");
      int64_t limit_kb = mlock_kb.ok() ? *mlock_kb : 516;
      size_t fit = 1;
      while (buffers_in_total * (2 * fit + 1) * page <= static_cast<size_t>(limit_kb) * 1024) fit *= 2;
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot map ", buffers_in_total, " ring buffers of ", data_pages, " pages (",
          std::strerror(err), "): /proc/sys/kernel/perf_event_mlock_kb is ", limit_kb,
          " KiB; use -m ", fit, " or less, or raise the limit"));
    }
    return ErrnoError(err, absl::StrCat("mmap of perf ring buffer (", data_pages, " pages)"));
  }
  RingBuffer ring(static_cast<perf_event_mmap_page*>(addr), static_cast<uint8_t*>(addr) + page,
                  data_pages * page);
  ring.mapping_ = ScopedMmap(addr, len);
  return ring;
}

RingBuffer::RingBuffer(perf_event_mmap_page* meta, uint8_t* data, size_t data_size)
    : meta_(meta), data_(data), data_size_(data_size) {}

void RingBuffer::BeginRead() {
  head_ = __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE);
  tail_ = meta_->data_tail;
  current_size_ = 0;
}

std::span<const uint8_t> RingBuffer::Peek() {
  if (current_size_ != 0) return Current();
  if (tail_ >= head_) return {};
  const uint64_t available = head_ - tail_;
  perf_event_header hdr;
  if (available < sizeof(hdr)) {
    ++stats_.corrupt;
    tail_ = head_;
    return {};
  }
  CopyOut(tail_, sizeof(hdr), reinterpret_cast<uint8_t*>(&hdr));
  if (hdr.size < sizeof(hdr) || hdr.size > available || hdr.size > data_size_ ||
      hdr.size % 8 != 0) {
    // A record the kernel cannot have written: skip the rest of the batch rather than loop on it.
    // One larger than the data area would also make CopyOut read past its end.
    ++stats_.corrupt;
    tail_ = head_;
    return {};
  }
  current_size_ = hdr.size;
  const uint64_t offset = tail_ & (data_size_ - 1);
  if (offset + hdr.size > data_size_) {
    if (scratch_.size() * 8 < hdr.size) scratch_.resize((hdr.size + 7) / 8);
    CopyOut(tail_, hdr.size, reinterpret_cast<uint8_t*>(scratch_.data()));
    wrapped_ = true;
  } else {
    wrapped_ = false;
  }
  return Current();
}

std::span<const uint8_t> RingBuffer::Current() const {
  if (wrapped_) return {reinterpret_cast<const uint8_t*>(scratch_.data()), current_size_};
  return {data_ + (tail_ & (data_size_ - 1)), current_size_};
}

void RingBuffer::Advance() {
  if (current_size_ == 0 && Peek().empty()) return;
  tail_ += current_size_;
  ++stats_.records;
  stats_.bytes += current_size_;
  current_size_ = 0;
}

void RingBuffer::EndRead() {
  current_size_ = 0;
  // Only after every record up to tail_ was consumed: the kernel may overwrite them from now on.
  __atomic_store_n(&meta_->data_tail, tail_, __ATOMIC_RELEASE);
}

size_t RingBuffer::DrainUnpublished(absl::FunctionRef<bool(std::span<const uint8_t>)> plausible,
                                    absl::FunctionRef<void(std::span<const uint8_t>)> fn) {
  uint64_t pos = meta_->data_tail;
  size_t recovered = 0;
  while (pos + sizeof(perf_event_header) <= data_size_) {
    perf_event_header header;
    std::memcpy(&header, data_ + pos, sizeof(header));
    if (header.size > sizeof(header) && header.size % 8 == 0 && pos + header.size <= data_size_) {
      std::span<const uint8_t> record(data_ + pos, header.size);
      if (plausible(record)) {
        fn(record);
        pos += header.size;
        ++recovered;
        continue;
      }
    }
    pos += 8;
  }
  if (recovered > 0) __atomic_store_n(&meta_->data_tail, pos, __ATOMIC_RELEASE);
  return recovered;
}

}  // namespace nativeprof::sampler
