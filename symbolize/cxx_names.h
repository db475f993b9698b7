// C++ (Itanium ABI) demangling through libiberty, the library c++filt itself uses, and the
// post-processing that turns a demangled C++ name into a profile frame name: dropping the
// argument list and trailing qualifiers while keeping `[clone ...]` suffixes, and the GCC/LLVM
// clone-suffix notation for plain C names. Internal to symbolize/ (callers use demangle.h);
// pure, thread-safe functions.
#ifndef NATIVEPROF_SYMBOLIZE_CXX_NAMES_H_
#define NATIVEPROF_SYMBOLIZE_CXX_NAMES_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize::cxx_internal {

// Demangles an Itanium C++ name exactly as `c++filt` prints it (libiberty cplus_demangle with
// DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE). With `drop_return_type` the top-level function's
// return type is left out (DMGL_RET_DROP). nullopt when `mangled` is not a valid C++ name.
std::optional<std::string> DemangleCxx(absl::string_view mangled, bool drop_return_type);

// Removes the argument list and the trailing cv/ref/noexcept qualifiers of a demangled function
// name, keeping any ` [clone ...]` suffixes: `ns::Foo<int>::bar(int, char const*) const
// [clone .cold]` -> `ns::Foo<int>::bar [clone .cold]`. Parentheses inside template arguments,
// `(anonymous namespace)`, `operator()`, `operator<` and lambdas `{lambda(int)#1}` are handled.
// Names that are not functions (variables, `vtable for X`) come back unchanged. Expects the
// return type already dropped (DemangleCxx with drop_return_type).
std::string StripCxxArguments(absl::string_view demangled);

// Writes GCC/LLVM clone suffixes as c++filt does for C++ names: `foo.cold` -> `foo [clone
// .cold]`, `foo.part.0.isra.0`... Only for a plain identifier followed by suffixes of the form
// libiberty accepts (`.` + [a-z0-9_]+, then `.` + digits groups); nullopt otherwise.
std::optional<std::string> FormatCloneSuffixes(absl::string_view name);

// Splits `name` into the part before its clone suffixes and the ` [clone ...]` text for them;
// false when `name` has no (valid) clone suffix. Used for C++ names whose suffix libiberty
// rejects, such as LLVM's `.llvm.<hex>`.
bool SplitAtFirstDot(absl::string_view name, absl::string_view* base, std::string* clone);

}  // namespace nativeprof::symbolize::cxx_internal

#endif  // NATIVEPROF_SYMBOLIZE_CXX_NAMES_H_
