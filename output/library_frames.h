// Which frames of a profile are a language's standard library rather than the program's own
// code: by their names, for Rust's std, core and alloc and C++'s std, which are compiled into the
// program (generics, templates, Rust's whole std), so the module a frame is in cannot tell; and
// by their module, for the C and C++ runtime's shared libraries.
// `report` steps over them to name the program's frame that called into the library: where an
// allocation was made, where a thread blocked. Told by the crate or namespace that
// output/module_key.h's CrateOf finds. Pure functions; any thread.
#ifndef NATIVEPROF_OUTPUT_LIBRARY_FRAMES_H_
#define NATIVEPROF_OUTPUT_LIBRARY_FRAMES_H_

#include "absl/strings/string_view.h"

namespace nativeprof::output {

// A function of Rust's std, core or alloc, or of C++'s std: a path under one of them
// (`std::thread::sleep`, `core::iter::Iterator::collect`, `std::vector<int>::_M_realloc_insert`),
// or a method of such a type, of a primitive or of a generic parameter
// (`<alloc::vec::Vec<T>>::push`, `<str>::to_lowercase`, `<[u8]>::to_vec`,
// `<T as alloc::string::ToString>::to_string`), and libstdc++'s helpers (`__gthread_*`,
// `__gnu_cxx::`). A trait's method implemented for the program's own type, or a reference to
// it (`<myapp::Parser as core::iter::Iterator>::next`, `<&myapp::Matrix as core::ops::Mul>::mul`),
// and a method of the program's own trait, are the program's. Not told apart: the program's
// impl of a standard trait for a standard type (`<String as From<myapp::Error>>::from`), and a
// C++ name with its return type (--full-names).
bool IsStandardLibraryFunction(absl::string_view function);

// A module (a mapped file's basename) of the C or C++ runtime, whose functions are the library's
// however they are named (glibc's `_IO_file_doallocate` under printf, `__fopen_internal`): glibc's
// libc, libm, libpthread, libdl, librt and loader, musl's libc, libstdc++, libc++, libc++abi and
// libgcc_s (and musl's libc and loader), at any version, and record --alloc's preload, whose
// malloc and free wrap glibc's. Not any other shared object: a program's own libraries are its
// code.
bool IsRuntimeLibraryModule(absl::string_view basename);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_LIBRARY_FRAMES_H_
