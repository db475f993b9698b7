// Punycode decoding, UTF-8 and escape_debug-style quoting for the Rust demanglers.
#include "symbolize/rust_demangle_text.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "symbolize/rust_demangle.h"

namespace nativeprof::symbolize::rust_internal {
namespace {

// rustc-demangle decodes Punycode into a fixed buffer of this many characters; longer
// identifiers are shown encoded.
constexpr size_t kSmallPunycodeLen = 128;

// RFC 3492 decoding with the ASCII part as the initial output. False on any malformed input,
// overflow, invalid code point or more than kSmallPunycodeLen characters.
bool PunycodeDecode(const Ident& ident, std::vector<uint32_t>* out) {
  if (ident.punycode.empty()) return false;
  out->clear();
  for (char c : ident.ascii) {
    if (out->size() >= kSmallPunycodeLen) return false;
    out->push_back(static_cast<uint8_t>(c));
  }
  constexpr uint64_t kBase = 36, kTMin = 1, kTMax = 26, kSkew = 38;
  uint64_t damp = 700, bias = 72, i = 0, n = 0x80;
  size_t pos = 0;
  const absl::string_view code = ident.punycode;
  while (true) {
    uint64_t delta = 0, w = 1;
    for (uint64_t k = kBase;; k += kBase) {
      uint64_t t = std::min(std::max(k > bias ? k - bias : 0, kTMin), kTMax);
      if (pos >= code.size()) return false;
      char c = code[pos++];
      uint64_t d;
      if (c >= 'a' && c <= 'z') {
        d = static_cast<uint64_t>(c - 'a');
      } else if (c >= '0' && c <= '9') {
        d = static_cast<uint64_t>(26 + c - '0');
      } else {
        return false;
      }
      uint64_t dw;
      if (__builtin_mul_overflow(d, w, &dw) || __builtin_add_overflow(delta, dw, &delta)) {
        return false;
      }
      if (d < t) break;
      if (__builtin_mul_overflow(w, kBase - t, &w)) return false;
    }
    uint64_t len = out->size() + 1;
    if (__builtin_add_overflow(i, delta, &i)) return false;
    if (__builtin_add_overflow(n, i / len, &n)) return false;
    i %= len;
    if (!IsScalarValue(n)) return false;
    if (out->size() >= kSmallPunycodeLen) return false;
    out->insert(out->begin() + static_cast<std::ptrdiff_t>(i), static_cast<uint32_t>(n));
    ++i;
    if (pos >= code.size()) return true;
    // Bias adaptation.
    delta /= damp;
    damp = 2;
    delta += delta / len;
    uint64_t k = 0;
    while (delta > ((kBase - kTMin) * kTMax) / 2) {
      delta /= kBase - kTMin;
      k += kBase;
    }
    bias = k + ((kBase - kTMin + 1) * delta) / (delta + kSkew);
  }
}

struct Range {
  uint32_t first, last;
};
// Code points Rust's escape_debug shows as \u{...}: controls, separators other than space,
// format characters, private use, noncharacters, large unassigned areas, and the common
// combining (Grapheme_Extend) blocks. An approximation of Rust's generated tables: it only
// matters for `char`/`&str` const generic values, which are rare in real symbols.
constexpr Range kEscaped[] = {
    {0x0000, 0x001F},   {0x007F, 0x009F},   {0x00A0, 0x00A0},    {0x00AD, 0x00AD},
    {0x0300, 0x036F},   {0x0483, 0x0489},   {0x0591, 0x05BD},    {0x05BF, 0x05BF},
    {0x05C1, 0x05C2},   {0x05C4, 0x05C5},   {0x05C7, 0x05C7},    {0x0600, 0x0605},
    {0x0610, 0x061A},   {0x061C, 0x061C},   {0x064B, 0x065F},    {0x0670, 0x0670},
    {0x06D6, 0x06DD},   {0x06DF, 0x06E4},   {0x06E7, 0x06E8},    {0x06EA, 0x06ED},
    {0x070F, 0x070F},   {0x1680, 0x1680},   {0x180E, 0x180E},    {0x1AB0, 0x1AFF},
    {0x1DC0, 0x1DFF},   {0x2000, 0x200F},   {0x2028, 0x202F},    {0x205F, 0x206F},
    {0x20D0, 0x20F0},   {0x3000, 0x3000},   {0x302A, 0x302F},    {0x3099, 0x309A},
    {0xD800, 0xF8FF},   {0xFDD0, 0xFDEF},   {0xFE00, 0xFE0F},    {0xFE20, 0xFE2F},
    {0xFEFF, 0xFEFF},   {0xFF9E, 0xFF9F},   {0xFFF0, 0xFFFB},    {0x110BD, 0x110BD},
    {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},  {0x1D173, 0x1D17A},
    {0x2FA20, 0x2FFFF}, {0x323B0, 0xE00FF}, {0xE01F0, 0x10FFFF},
};

bool IsEscaped(uint32_t c) {
  if ((c & 0xFFFE) == 0xFFFE) return true;  // noncharacters U+xFFFE, U+xFFFF
  // The table is sorted; a binary search keeps this cheap for long strings.
  const Range* end = kEscaped + sizeof(kEscaped) / sizeof(kEscaped[0]);
  const Range* it =
      std::upper_bound(kEscaped, end, c, [](uint32_t v, const Range& r) { return v < r.first; });
  return it != kEscaped && c <= (it - 1)->last;
}

}  // namespace

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

void PrintIdentTo(const Ident& ident, std::string* out) {
  std::vector<uint32_t> chars;
  if (PunycodeDecode(ident, &chars)) {
    for (uint32_t c : chars) AppendUtf8(c, out);
    return;
  }
  if (ident.punycode.empty()) {
    out->append(ident.ascii.data(), ident.ascii.size());
    return;
  }
  out->append("punycode{");
  if (!ident.ascii.empty()) {
    out->append(ident.ascii.data(), ident.ascii.size());
    out->push_back('-');
  }
  out->append(ident.punycode.data(), ident.punycode.size());
  out->push_back('}');
}

bool DecodeUtf8Nibbles(absl::string_view nibbles, std::vector<uint32_t>* chars) {
  if (nibbles.size() % 2 != 0) return false;
  auto nibble = [](char c) -> uint32_t {
    return c <= '9' ? static_cast<uint32_t>(c - '0') : static_cast<uint32_t>(c - 'a' + 10);
  };
  std::vector<uint8_t> bytes;
  bytes.reserve(nibbles.size() / 2);
  for (size_t i = 0; i < nibbles.size(); i += 2) {
    bytes.push_back(static_cast<uint8_t>(nibble(nibbles[i]) << 4 | nibble(nibbles[i + 1])));
  }
  chars->clear();
  for (size_t i = 0; i < bytes.size();) {
    uint8_t b = bytes[i];
    size_t len;
    uint32_t c, min;
    if (b < 0x80) {
      len = 1, c = b, min = 0;
    } else if (b >= 0xC0 && b <= 0xDF) {
      len = 2, c = b & 0x1F, min = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3, c = b & 0x0F, min = 0x800;
    } else if (b >= 0xF0 && b <= 0xF7) {
      len = 4, c = b & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (bytes.size() - i < len) return false;
    for (size_t j = 1; j < len; ++j) {
      if ((bytes[i + j] & 0xC0) != 0x80) return false;
      c = c << 6 | (bytes[i + j] & 0x3F);
    }
    if (c < min || !IsScalarValue(c)) return false;
    chars->push_back(c);
    i += len;
  }
  return true;
}

void AppendQuotedEscaped(char quote, const std::vector<uint32_t>& chars, std::string* out) {
  out->push_back(quote);
  for (uint32_t c : chars) {
    switch (c) {
      case '\0':
        out->append("\\0");
        continue;
      case '\t':
        out->append("\\t");
        continue;
      case '\r':
        out->append("\\r");
        continue;
      case '\n':
        out->append("\\n");
        continue;
      case '\\':
        out->append("\\\\");
        continue;
      case '"':
      case '\'':
        // Only the quote kind in use needs escaping.
        if (static_cast<char>(c) == quote) out->push_back('\\');
        out->push_back(static_cast<char>(c));
        continue;
      default:
        break;
    }
    if (IsEscaped(c)) {
      absl::StrAppendFormat(out, "\\u{%x}", c);
    } else {
      AppendUtf8(c, out);
    }
  }
  out->push_back(quote);
}

}  // namespace nativeprof::symbolize::rust_internal
