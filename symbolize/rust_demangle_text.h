// Text pieces of Rust demangling shared by the legacy and v0 printers: identifiers with Punycode
// (v0 `u`-prefixed identifiers), UTF-8 encoding, and Rust's `char::escape_debug` quoting used
// for v0 const generic `char` and `&str` values. Internal to symbolize/; pure functions.
#ifndef NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_TEXT_H_
#define NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize::rust_internal {

// A v0 identifier: plain ASCII, or (for `u` identifiers) an ASCII part plus a Punycode part
// (RFC 3492 with `_` instead of `-` as the separator).
struct Ident {
  absl::string_view ascii;
  absl::string_view punycode;
};

// Appends the identifier's text: Punycode decoded when it decodes to at most 128 characters,
// else `punycode{<ascii>-<punycode>}` as rustc-demangle prints it.
void PrintIdentTo(const Ident& ident, std::string* out);

// Decodes nibbles (pairs of lowercase hex digits, one byte each) as strict UTF-8 into code
// points; false on odd length or any invalid sequence (overlong, surrogate, > U+10FFFF).
bool DecodeUtf8Nibbles(absl::string_view nibbles, std::vector<uint32_t>* chars);

// Appends `quote`, the characters escaped as Rust's `char::escape_debug` does (\t \r \n \\ \0,
// the quote character, and \u{...} for non-printable and combining characters; the other quote
// kind is left alone), then `quote`. Printability uses a compact table approximating Rust's.
void AppendQuotedEscaped(char quote, const std::vector<uint32_t>& chars, std::string* out);

}  // namespace nativeprof::symbolize::rust_internal

#endif  // NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_TEXT_H_
