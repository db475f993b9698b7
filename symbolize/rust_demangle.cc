// Top level of Rust demangling, as rustc-demangle's `demangle()` and its Display: strip a ThinLTO
// `.llvm.<hex>` suffix, try legacy then v0, keep trailing `.`-separated words that look like a
// symbol (LLVM IR branch labels such as `.exit.i.i`), reject anything else.
#include "symbolize/rust_demangle.h"

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "symbolize/demangle.h"

namespace nativeprof::symbolize {
namespace rust_internal {
namespace {

bool IsAsciiPunct(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
         (c >= '{' && c <= '~');
}
bool IsAsciiAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsSymbolLike(absl::string_view s) {
  for (char c : s) {
    if (!IsAsciiAlnum(c) && !IsAsciiPunct(c)) return false;
  }
  return true;
}

}  // namespace

RustSymbol ParseRustSymbol(absl::string_view mangled) {
  RustSymbol result;
  absl::string_view s = mangled;
  // ThinLTO renames imported internal symbols to `<name>.llvm.<hex>`; rustc-demangle drops it.
  constexpr absl::string_view kLlvm = ".llvm.";
  size_t llvm = s.find(kLlvm);
  if (llvm != absl::string_view::npos) {
    absl::string_view candidate = s.substr(llvm + kLlvm.size());
    bool all_hex = true;
    for (char c : candidate) {
      if (!((c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') || c == '@')) all_hex = false;
    }
    if (all_hex) s = s.substr(0, llvm);
  }
  absl::string_view rest;
  if (ParseLegacy(s, &rest)) {
    result.scheme = RustScheme::kLegacy;
  } else if (ParseV0(s, &rest)) {
    result.scheme = RustScheme::kV0;
  } else {
    return result;
  }
  if (!rest.empty() && (rest[0] != '.' || !IsSymbolLike(rest))) {
    result.scheme = RustScheme::kNone;
    return result;
  }
  result.symbol = s;
  result.suffix = rest;
  return result;
}

std::string PrintRustSymbol(const RustSymbol& symbol, bool alternate) {
  std::string out;
  if (symbol.scheme == RustScheme::kLegacy) {
    PrintLegacy(symbol.symbol, alternate, &out);
  } else {
    PrintV0(symbol.symbol, alternate, &out);
  }
  out.append(symbol.suffix.data(), symbol.suffix.size());
  return out;
}

}  // namespace rust_internal

std::optional<std::string> DemangleRust(absl::string_view mangled, bool alternate) {
  rust_internal::RustSymbol symbol = rust_internal::ParseRustSymbol(mangled);
  if (symbol.scheme == rust_internal::RustScheme::kNone) return std::nullopt;
  return rust_internal::PrintRustSymbol(symbol, alternate);
}

}  // namespace nativeprof::symbolize
