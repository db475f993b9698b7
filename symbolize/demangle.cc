// Dispatch between the Rust and C++ demanglers, and the profile-frame form of a name.
#include "symbolize/demangle.h"

#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "symbolize/cxx_names.h"
#include "symbolize/rust_demangle.h"

namespace nativeprof::symbolize {
namespace {

enum class Language { kCxx, kRust };

struct Demangled {
  Language language;
  std::string text;
};

// Rust v0 first (its `_R` prefix cannot be C++); legacy Rust before C++ only when the name is
// recognisably Rust (hash element or `$` escapes), since a plain `_ZN3foo3barE` is also a valid
// C++ name and c++filt treats it as one; legacy Rust after C++ for what C++ rejects (`ZN...E`
// without underscore, `__ZN...` from macOS).
std::optional<Demangled> DemangleAny(absl::string_view name, bool full_names,
                                     bool drop_return_type) {
  rust_internal::RustSymbol rust = rust_internal::ParseRustSymbol(name);
  bool rust_first = rust.scheme == rust_internal::RustScheme::kV0 ||
                    (rust.scheme == rust_internal::RustScheme::kLegacy &&
                     rust_internal::LooksLikeRustLegacy(rust.symbol));
  if (rust_first)
    return Demangled{Language::kRust, rust_internal::PrintRustSymbol(rust, !full_names)};
  if (absl::StartsWith(name, "_Z") || absl::StartsWith(name, "_GLOBAL_")) {
    if (std::optional<std::string> cxx = cxx_internal::DemangleCxx(name, drop_return_type)) {
      return Demangled{Language::kCxx, *std::move(cxx)};
    }
  }
  if (rust.scheme != rust_internal::RustScheme::kNone) {
    return Demangled{Language::kRust, rust_internal::PrintRustSymbol(rust, !full_names)};
  }
  return std::nullopt;
}

// `_ZTV` vtable, `_ZTT` VTT, `_ZTI` typeinfo, `_ZTS` typeinfo name, `_ZTC` construction vtable.
bool IsTypeObject(absl::string_view mangled) {
  return mangled.size() > 4 && absl::StartsWith(mangled, "_ZT") &&
         absl::string_view("VTISC").find(mangled[3]) != absl::string_view::npos;
}

}  // namespace

std::string DemangleForDisplay(absl::string_view mangled, const DemangleOptions& options) {
  // Like c++filt, skip one leading `.` or `$` (function descriptors, assembler conventions) and
  // put the `.` back in front of a successful result.
  absl::string_view name = mangled;
  if (!name.empty() && (name[0] == '.' || name[0] == '$')) name.remove_prefix(1);
  std::optional<Demangled> d = DemangleAny(name, options.full_names, /*drop_return_type=*/false);
  if (!d.has_value()) return std::string(mangled);
  if (mangled[0] == '.') return "." + d->text;
  return std::move(d->text);
}

std::string DemangleSymbol(absl::string_view mangled, const DemangleOptions& options) {
  // Virtual tables, VTTs and typeinfo objects name a type, not a function: nothing to strip (and
  // DMGL_RET_DROP would mangle `typeinfo for void (*)(int)`).
  bool full = options.full_names || IsTypeObject(mangled);
  if (std::optional<Demangled> d = DemangleAny(mangled, full, /*drop_return_type=*/!full)) {
    if (d->language == Language::kCxx && !full) return cxx_internal::StripCxxArguments(d->text);
    return std::move(d->text);
  }
  // A C++ name whose suffix libiberty rejects (LLVM's `.llvm.<hex>`, `.cold.1.llvm.`...):
  // demangle the part before the first dot and show the rest as a clone.
  absl::string_view base;
  std::string clone;
  if (absl::StartsWith(mangled, "_Z") && cxx_internal::SplitAtFirstDot(mangled, &base, &clone)) {
    if (std::optional<std::string> cxx = cxx_internal::DemangleCxx(base, !full)) {
      std::string out = full ? *std::move(cxx) : cxx_internal::StripCxxArguments(*cxx);
      return out + clone;
    }
  }
  // A C function clone from GCC (`foo.cold`, `foo.isra.0`) or LLVM.
  if (std::optional<std::string> c = cxx_internal::FormatCloneSuffixes(mangled)) return *c;
  return std::string(mangled);
}

}  // namespace nativeprof::symbolize
