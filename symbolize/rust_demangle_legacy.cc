// Legacy Rust mangling: an Itanium-style nested name `_ZN <len><ident>... E` whose identifiers
// carry `$..$` escapes (`$LT$` is `<`, `$u20$` is a space, ...), `..` for `::`, and usually a
// final `17h<16 hex digits>` hash element. Behaviour follows rustc-demangle's legacy module.
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "symbolize/rust_demangle.h"

namespace nativeprof::symbolize::rust_internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Strips the platform prefix (`_ZN`, `ZN` from dbghelp, `__ZN` on macOS). Empty on no match.
absl::string_view LegacyInner(absl::string_view s) {
  if (s.size() > 4 && s.substr(0, 3) == "_ZN") return s.substr(3);
  if (s.size() > 3 && s.substr(0, 2) == "ZN") return s.substr(2);
  if (s.size() > 5 && s.substr(0, 4) == "__ZN") return s.substr(4);
  return absl::string_view();
}

// A hash element: `h` followed only by hex digits (either case), as rustc-demangle checks it.
bool IsRustHash(absl::string_view s) {
  if (s.empty() || s[0] != 'h') return false;
  for (char c : s.substr(1)) {
    if (!IsHexDigit(c)) return false;
  }
  return true;
}

// Decodes the text between two `$` of an escape; false when rustc-demangle would stop decoding.
bool Unescape(absl::string_view escape, std::string* out) {
  struct Named {
    const char* name;
    const char* text;
  };
  static constexpr Named kNamed[] = {{"SP", "@"}, {"BP", "*"}, {"RF", "&"}, {"LT", "<"},
                                     {"GT", ">"}, {"LP", "("}, {"RP", ")"}, {"C", ","}};
  for (const Named& n : kNamed) {
    if (escape == n.name) {
      out->append(n.text);
      return true;
    }
  }
  if (escape.empty() || escape[0] != 'u') return false;
  absl::string_view digits = escape.substr(1);
  if (digits.empty()) return false;
  uint64_t value = 0;
  for (char c : digits) {
    if (!(IsDigit(c) || (c >= 'a' && c <= 'f'))) return false;
    value = value * 16 + static_cast<uint64_t>(IsDigit(c) ? c - '0' : c - 'a' + 10);
    if (value > 0x10FFFF) return false;
  }
  if (!IsScalarValue(value)) return false;
  // Control characters (general category Cc) stay escaped.
  if (value < 0x20 || (value >= 0x7F && value < 0xA0)) return false;
  AppendUtf8(static_cast<uint32_t>(value), out);
  return true;
}

void PrintElement(absl::string_view rest, std::string* out) {
  if (rest.size() >= 2 && rest[0] == '_' && rest[1] == '$') rest.remove_prefix(1);
  while (!rest.empty()) {
    if (rest[0] == '.') {
      if (rest.size() >= 2 && rest[1] == '.') {
        out->append("::");
        rest.remove_prefix(2);
      } else {
        out->push_back('.');
        rest.remove_prefix(1);
      }
    } else if (rest[0] == '$') {
      size_t end = rest.find('$', 1);
      if (end == absl::string_view::npos) break;
      if (!Unescape(rest.substr(1, end - 1), out)) break;
      rest.remove_prefix(end + 1);
    } else {
      size_t i = rest.find_first_of("$.");
      if (i == absl::string_view::npos) break;
      out->append(rest.data(), i);
      rest.remove_prefix(i);
    }
  }
  out->append(rest.data(), rest.size());
}

}  // namespace

bool ParseLegacy(absl::string_view symbol, absl::string_view* rest) {
  absl::string_view inner = LegacyInner(symbol);
  if (inner.empty()) return false;
  for (char c : inner) {
    if (static_cast<unsigned char>(c) & 0x80) return false;
  }
  size_t pos = 0;
  while (true) {
    if (pos >= inner.size()) return false;
    if (inner[pos] == 'E') break;
    if (!IsDigit(inner[pos])) return false;
    uint64_t len = 0;
    while (pos < inner.size() && IsDigit(inner[pos])) {
      len = len * 10 + static_cast<uint64_t>(inner[pos] - '0');
      if (len > inner.size()) return false;  // cannot fit; also keeps the arithmetic bounded
      ++pos;
    }
    // The identifier must be followed by at least one more character (the next element or E).
    if (len >= inner.size() - pos) return false;
    pos += len;
  }
  *rest = inner.substr(pos + 1);
  return true;
}

void PrintLegacy(absl::string_view symbol, bool alternate, std::string* out) {
  absl::string_view inner = LegacyInner(symbol);
  // Collect element boundaries first: the alternate form needs to know which one is last.
  size_t elements = 0;
  for (size_t pos = 0; inner[pos] != 'E'; ++elements) {
    uint64_t len = 0;
    while (IsDigit(inner[pos])) len = len * 10 + static_cast<uint64_t>(inner[pos++] - '0');
    pos += len;
  }
  size_t pos = 0;
  for (size_t element = 0; element < elements; ++element) {
    uint64_t len = 0;
    while (IsDigit(inner[pos])) len = len * 10 + static_cast<uint64_t>(inner[pos++] - '0');
    absl::string_view ident = inner.substr(pos, len);
    pos += len;
    if (alternate && element + 1 == elements && IsRustHash(ident)) break;
    if (element != 0) out->append("::");
    PrintElement(ident, out);
  }
}

bool LooksLikeRustLegacy(absl::string_view symbol) {
  absl::string_view inner = LegacyInner(symbol);
  absl::string_view last;
  for (size_t pos = 0; inner[pos] != 'E';) {
    uint64_t len = 0;
    while (IsDigit(inner[pos])) len = len * 10 + static_cast<uint64_t>(inner[pos++] - '0');
    last = inner.substr(pos, len);
    if (last.find('$') != absl::string_view::npos || last.find("..") != absl::string_view::npos) {
      return true;
    }
    pos += len;
  }
  if (last.size() != 17 || last[0] != 'h') return false;
  for (char c : last.substr(1)) {
    if (!IsDigit(c) && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

}  // namespace nativeprof::symbolize::rust_internal
