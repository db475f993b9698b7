// Move-only owners for file descriptors and memory mappings. Every fd and mmap in nativeprof lives
// in one of these. Not thread-safe; destructors are async-signal-safe (close/munmap only).
#ifndef NATIVEPROF_BASE_SCOPED_FD_H_
#define NATIVEPROF_BASE_SCOPED_FD_H_

#include <cstddef>
#include <utility>

namespace nativeprof {

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

class ScopedMmap {
 public:
  ScopedMmap() = default;
  ScopedMmap(void* addr, size_t size) : addr_(addr), size_(size) {}
  ScopedMmap(ScopedMmap&& other) noexcept
      : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  ScopedMmap& operator=(ScopedMmap&& other) noexcept;
  ScopedMmap(const ScopedMmap&) = delete;
  ScopedMmap& operator=(const ScopedMmap&) = delete;
  ~ScopedMmap() { Reset(); }

  void* get() const { return addr_; }
  size_t size() const { return size_; }
  bool valid() const { return addr_ != nullptr; }
  void Reset();

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_SCOPED_FD_H_
