// A tiny protobuf wire-format reader for tests: splits a message into (field, wire type, value)
// records so tests can check what the pprof writer encoded without libprotobuf.
#ifndef NATIVEPROF_TESTS_UNIT_OUTPUT_WIRE_DECODER_H_
#define NATIVEPROF_TESTS_UNIT_OUTPUT_WIRE_DECODER_H_

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nativeprof::output::testing {

struct WireField {
  uint32_t field = 0;
  uint32_t wire_type = 0;
  uint64_t varint = 0;  // wire type 0
  std::string bytes;    // wire type 2
};

inline bool ReadVarint(const std::string& s, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

// Returns false on malformed input (or a wire type other than 0 and 2, which pprof never uses).
inline bool DecodeMessage(const std::string& s, std::vector<WireField>* out) {
  size_t pos = 0;
  while (pos < s.size()) {
    uint64_t tag = 0;
    if (!ReadVarint(s, &pos, &tag)) return false;
    WireField f;
    f.field = static_cast<uint32_t>(tag >> 3);
    f.wire_type = static_cast<uint32_t>(tag & 7);
    if (f.wire_type == 0) {
      if (!ReadVarint(s, &pos, &f.varint)) return false;
    } else if (f.wire_type == 2) {
      uint64_t len = 0;
      if (!ReadVarint(s, &pos, &len) || pos + len > s.size()) return false;
      f.bytes = s.substr(pos, len);
      pos += len;
    } else {
      return false;
    }
    out->push_back(std::move(f));
  }
  return true;
}

inline std::vector<uint64_t> DecodePacked(const std::string& s) {
  std::vector<uint64_t> out;
  size_t pos = 0;
  uint64_t v = 0;
  while (pos < s.size() && ReadVarint(s, &pos, &v)) out.push_back(v);
  return out;
}

inline std::string Gunzip(const std::string& in) {
  z_stream zs{};
  inflateInit2(&zs, 15 + 16);
  std::string out;
  char buf[65536];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  }
  inflateEnd(&zs);
  return rc == Z_STREAM_END ? out : std::string();
}

}  // namespace nativeprof::output::testing

#endif  // NATIVEPROF_TESTS_UNIT_OUTPUT_WIRE_DECODER_H_
