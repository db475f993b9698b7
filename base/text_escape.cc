#include "base/text_escape.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace nativeprof {
namespace {

// Length of the well-formed UTF-8 sequence of two or more bytes at the start of `s` (Unicode 15
// table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), 0 when there is none.
size_t Utf8SequenceLength(absl::string_view s, uint32_t* code_point) {
  const auto byte = [&s](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(0);
  size_t length;
  uint8_t lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < length || byte(1) < lo || byte(1) > hi) return 0;
  uint32_t cp = b0 & (0xff >> (length + 1));
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i) & 0x3f);
  }
  *code_point = cp;
  return length;
}

// C1 controls, and the characters that end a line or reorder the rest of it.
bool UnsafeCodePoint(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void AppendHexByte(std::string* out, uint8_t b) {
  constexpr char kHex[] = "0123456789abcdef";
  out->append("\\x");
  out->push_back(kHex[b >> 4]);
  out->push_back(kHex[b & 0xf]);
}

}  // namespace

std::string EscapeForMessage(absl::string_view bytes, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const uint8_t b = static_cast<uint8_t>(bytes[i]);
    size_t length = 1;
    uint32_t cp = 0;
    if (b >= 0x80) length = Utf8SequenceLength(bytes.substr(i), &cp);
    if (i + (length == 0 ? 1 : length) > max_bytes) break;
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out.push_back(static_cast<char>(b));
    } else if (b == '\\') {
      out.append("\\\\");
    } else if (b == '\n') {
      out.append("\\n");
    } else if (b == '\t') {
      out.append("\\t");
    } else if (b == '\r') {
      out.append("\\r");
    } else if (length > 1 && !UnsafeCodePoint(cp)) {
      out.append(bytes.data() + i, length);
    } else {
      // A control byte, a byte that starts no well-formed sequence, or an unsafe character.
      if (length == 0) length = 1;
      for (size_t k = 0; k < length; ++k) AppendHexByte(&out, static_cast<uint8_t>(bytes[i + k]));
    }
    i += length;
  }
  if (i < bytes.size()) absl::StrAppend(&out, "... (", bytes.size() - i, " more bytes)");
  return out;
}

}  // namespace nativeprof
