// Which module a frame belongs to for `nativeprof report --by module`: the kernel, JIT code, a
// shared object, or - for code linked into the executable - the crate or top-level namespace
// its demangled name starts with. Works from the folded display name plus, when `record` wrote
// one, the frame's module basename (output/frame_modules.h). Pure functions; any thread.
#ifndef NATIVEPROF_OUTPUT_MODULE_KEY_H_
#define NATIVEPROF_OUTPUT_MODULE_KEY_H_

#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof::output {

// ModuleKey()
//
// The module key of a frame shown as `folded_name` (exactly as in a folded file, suffix
// included) whose mapped file's basename is `module` ("" when unknown):
//   "..._[k]"                        -> "[kernel]"
//   "..._[j]"                        -> "[jit]"
//   `module` contains ".so"          -> `module` (e.g. "libc.so.6")
//   "[libfoo.so]" (no symbol)        -> "libfoo.so"; "[unknown]" stays "[unknown]"
//   a name with a path ("a::b")      -> CrateOf(name): "hotlib::run" -> "hotlib"
//   a plain C name                   -> `module` (the executable) or "[unknown]"
// "_[i]" (inlined) frames are classified by their name like any other frame.
std::string ModuleKey(absl::string_view folded_name, absl::string_view module);

// CrateOf()
//
// The crate (Rust) or top-level namespace (C++) a demangled name lives in, "" when it has no
// path: the first "::" segment, with a v0 crate disambiguator ("core[846817f741e54dfd]") dropped.
// For a qualified path "<T as Trait>::f" or "<T>::f" it is T's crate (after "&", "&mut ",
// "*const ", "*mut " and "dyn "); when T has no path of its own (a generic "T", a slice "[T]" or
// a tuple), or T is the standard library's and the trait is not, it is the trait's crate, where
// the impl then is. An inherent method of a type without a path ("<u64>::wrapping_mul",
// "<str>::to_lowercase", "<[T]>::sort"), which only the standard library can define, is "core"'s.
// "<hotlib::Foo as core::fmt::Display>::fmt" -> "hotlib",
// "<&T as core::fmt::Debug>::fmt" -> "core", "<alloc::vec::Vec<u8> as hotlib::Grow>::grow" ->
// "hotlib", "std::vector<int>::push_back" -> "std".
std::string CrateOf(absl::string_view name);

// Whether `crate` (as CrateOf gives it) is a language's standard library: Rust's std, core,
// alloc and their runtime crates, C++'s std and libstdc++'s __gnu_cxx and __cxxabiv1.
bool IsStandardCrate(absl::string_view crate);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_MODULE_KEY_H_
