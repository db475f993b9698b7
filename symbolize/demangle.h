// Symbol demangling for profile display and for `nativeprof demangle`: C++ (Itanium ABI, through
// libiberty's cplus_demangle, the code c++filt runs), Rust legacy and Rust v0 (our own
// implementation matching rustc-demangle) and GCC/LLVM clone suffixes. The names are plain text;
// making them safe for an output format is output/'s job (folded_writer.h). Used by the symbolizer
// after the target exits and by the demangle subcommand. Every function is pure and thread-safe, and never fails: a name that
// cannot be demangled comes back unchanged.
#ifndef NATIVEPROF_SYMBOLIZE_DEMANGLE_H_
#define NATIVEPROF_SYMBOLIZE_DEMANGLE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

struct DemangleOptions {
  bool full_names = false;  // Rust: full form (hashes, crate disambiguators, int suffixes)
                            // C++: keep return types, argument lists and cv/ref qualifiers
};

// Returns the display name for a symbol as it should appear in a profile frame. C++ names lose
// their return type, argument list and trailing qualifiers unless options.full_names
// (`ns::Foo<int>::bar(int) const` -> `ns::Foo<int>::bar`); clone suffixes are kept as
// ` [clone .cold]`, also on plain C names (`foo.cold` -> `foo [clone .cold]`). Rust names are in
// rustc-demangle's alternate form (full form with options.full_names). Never fails: a name that
// cannot be demangled is returned unchanged (after clone-suffix handling).
std::string DemangleSymbol(absl::string_view mangled, const DemangleOptions& options);

// c++filt-compatible: C++ exactly as `c++filt` prints it (with argument lists); Rust in the
// alternate form, or the full form when options.full_names. Unknown names come back unchanged.
std::string DemangleForDisplay(absl::string_view mangled, const DemangleOptions& options);

// Lower-level: Rust only, exactly rustc-demangle's `{:#}` (alternate) or `{}` output. Returns
// nullopt when `mangled` is not a valid Rust symbol. Legacy names are accepted with or without
// the `17h<hash>` element, as rustc-demangle does.
std::optional<std::string> DemangleRust(absl::string_view mangled, bool alternate);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_DEMANGLE_H_
