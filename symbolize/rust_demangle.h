// Rust symbol demangling, written for nativeprof to match the output of the `rustc-demangle` crate
// (the Rust project's reference demangler): legacy `_ZN...17h<hash>E` names and v0 `_R...` names.
// Internal to symbolize/: callers use DemangleRust() / DemangleSymbol() from symbolize/demangle.h.
// Pure functions, no shared state: safe from any thread. Bounded work on any input (nesting depth
// limit of 500 and an output limit of 1,000,000 bytes, as rustc-demangle has).
#ifndef NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_H_
#define NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize::rust_internal {

// rustc-demangle's limits: v0 nesting depth and bytes of demangled output. Past the output limit
// the result is the output so far followed by "{size limit reached}".
inline constexpr uint32_t kMaxDepth = 500;
inline constexpr size_t kMaxOutputBytes = 1000000;

// rustc-demangle's top level: the scheme a symbol uses, the symbol without a ThinLTO
// `.llvm.<hex>` suffix, and the trailing `.`-words (LLVM IR labels and the like) it keeps.
enum class RustScheme { kNone, kLegacy, kV0 };
struct RustSymbol {
  RustScheme scheme = RustScheme::kNone;
  absl::string_view symbol;  // without the `.llvm.` suffix
  absl::string_view suffix;  // printed after the demangled path
};
RustSymbol ParseRustSymbol(absl::string_view mangled);
// Renders a symbol whose scheme is not kNone; output is bounded by kMaxOutputBytes.
std::string PrintRustSymbol(const RustSymbol& symbol, bool alternate);

// True when a legacy-valid symbol is recognisably Rust rather than a C++ nested name: its last
// element is a `h<16 hex digits>` hash (the rule c++filt uses), or an element carries `$`
// escapes or `..`.
bool LooksLikeRustLegacy(absl::string_view symbol);

// Legacy scheme. `symbol` has had any `.llvm.<hex>` suffix removed. ParseLegacy returns true for
// a well-formed `_ZN...E` name and sets `*rest` to the text after the closing `E`; PrintLegacy
// (only for names ParseLegacy accepted) appends the demangled path to `*out` (alternate: without
// a trailing `h<hex>` hash element).
bool ParseLegacy(absl::string_view symbol, absl::string_view* rest);
void PrintLegacy(absl::string_view symbol, bool alternate, std::string* out);

// v0 scheme. Same contract: ParseV0 validates and finds the trailing text, PrintV0 renders
// (alternate: no crate disambiguators and no integer type suffixes).
bool ParseV0(absl::string_view symbol, absl::string_view* rest);
void PrintV0(absl::string_view symbol, bool alternate, std::string* out);

// Appends the UTF-8 encoding of code point `c` (which must be a valid Unicode scalar value).
void AppendUtf8(uint32_t c, std::string* out);
// True for a Unicode scalar value: at most 0x10FFFF and not a surrogate.
inline bool IsScalarValue(uint64_t c) { return c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

}  // namespace nativeprof::symbolize::rust_internal

#endif  // NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_H_
