// A minimal protocol-buffer wire-format encoder: varints, packed repeated varints and nested
// length-delimited messages, appended to a std::string. Enough for profile.proto, which the pprof
// writer encodes without protoc or libprotobuf (see docs/output-formats.md). Not thread-safe; one
// encoder per message being built.
#ifndef NATIVEPROF_OUTPUT_PROTOBUF_ENCODER_H_
#define NATIVEPROF_OUTPUT_PROTOBUF_ENCODER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace nativeprof::output {

class ProtoEncoder {
 public:
  // Appends a varint field (wire type 0). Zero values are still written: callers skip defaults.
  void Varint(uint32_t field, uint64_t value);
  // Appends a signed int64 field as a two's-complement varint (proto int64, not sint64).
  void Int64(uint32_t field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  // Appends a length-delimited field (wire type 2): strings, bytes, nested messages.
  void Bytes(uint32_t field, absl::string_view bytes);
  // Appends a packed repeated varint field; nothing when `values` is empty.
  void PackedVarints(uint32_t field, const std::vector<uint64_t>& values);

  const std::string& data() const { return data_; }
  std::string Take() { return std::move(data_); }
  void Clear() { data_.clear(); }

 private:
  void Tag(uint32_t field, uint32_t wire_type);
  void RawVarint(uint64_t value);

  std::string data_;
};

// gzip-compresses `data` (RFC 1952 with a zero mtime, so output is deterministic).
// Returns the compressed bytes; never fails on valid input.
std::string GzipCompress(absl::string_view data, int level);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_PROTOBUF_ENCODER_H_
