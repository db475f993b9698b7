#include "output/protobuf_encoder.h"

#include <zlib.h>

#include <cstring>

namespace nativeprof::output {

void ProtoEncoder::RawVarint(uint64_t value) {
  while (value >= 0x80) {
    data_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  data_.push_back(static_cast<char>(value));
}

void ProtoEncoder::Tag(uint32_t field, uint32_t wire_type) {
  RawVarint((static_cast<uint64_t>(field) << 3) | wire_type);
}

void ProtoEncoder::Varint(uint32_t field, uint64_t value) {
  Tag(field, 0);
  RawVarint(value);
}

void ProtoEncoder::Bytes(uint32_t field, absl::string_view bytes) {
  Tag(field, 2);
  RawVarint(bytes.size());
  data_.append(bytes.data(), bytes.size());
}

void ProtoEncoder::PackedVarints(uint32_t field, const std::vector<uint64_t>& values) {
  if (values.empty()) return;
  size_t len = 0;
  for (uint64_t v : values) {
    do {
      ++len;
      v >>= 7;
    } while (v != 0);
  }
  Tag(field, 2);
  RawVarint(len);
  for (uint64_t v : values) RawVarint(v);
}

std::string GzipCompress(absl::string_view data, int level) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  // windowBits 15 + 16 asks zlib for a gzip wrapper; its header has mtime 0 and no file name.
  deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace nativeprof::output
