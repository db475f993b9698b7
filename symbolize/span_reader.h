// Sequential little-endian reads within one span of section bytes, for the DWARF that nativeprof
// reads itself rather than through libdw; every read checks what is left first. Little-endian
// files only, as the rest of the DWARF readers.
#ifndef NATIVEPROF_SYMBOLIZE_SPAN_READER_H_
#define NATIVEPROF_SYMBOLIZE_SPAN_READER_H_

#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

class SpanReader {
 public:
  explicit SpanReader(absl::string_view bytes) : bytes_(bytes) {}

  uint64_t position() const { return at_; }
  uint64_t remaining() const { return bytes_.size() - at_; }

  bool Fixed(size_t size, uint64_t* value) {
    if (size > sizeof(uint64_t) || remaining() < size) return false;
    uint64_t v = 0;
    std::memcpy(&v, bytes_.data() + at_, size);
    at_ += size;
    *value = v;
    return true;
  }
  bool Skip(uint64_t size) {
    if (remaining() < size) return false;
    at_ += size;
    return true;
  }
  // LEB128, signed or not: at most 10 bytes, all of them within the span.
  bool Leb(uint64_t* value) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (remaining() == 0) return false;
      const uint8_t byte = static_cast<uint8_t>(bytes_[at_++]);
      if (shift < 64) v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = v;
        return true;
      }
    }
    return false;
  }
  // A NUL-terminated string, NUL included.
  bool CString() {
    const size_t nul = bytes_.find('\0', at_);
    if (nul == absl::string_view::npos) return false;
    at_ = nul + 1;
    return true;
  }
  uint8_t Peek() const { return static_cast<uint8_t>(bytes_[at_]); }

 private:
  absl::string_view bytes_;
  uint64_t at_ = 0;
};

// A DWARF initial length: 4 bytes, or 0xffffffff and 8 more (64-bit DWARF, whose offsets are 8
// bytes). False for the reserved values and a span too short.
inline bool ReadInitialLength(SpanReader* r, uint64_t* length, uint8_t* offset_size) {
  uint64_t v = 0;
  if (!r->Fixed(4, &v)) return false;
  if (v < 0xfffffff0u) {
    *length = v;
    *offset_size = 4;
    return true;
  }
  if (v != 0xffffffffu || !r->Fixed(8, &v)) return false;
  *length = v;
  *offset_size = 8;
  return true;
}

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_SPAN_READER_H_
