#include "output/library_frames.h"

#include <string>

#include "gtest/gtest.h"

namespace nativeprof::output {
namespace {

TEST(LibraryFramesTest, StandardLibraryPathsTypesAndImpls) {
  for (const char* f : {"std::thread::functions::sleep", "core::iter::traits::iterator::Iterator::collect",
                        "alloc::raw_vec::finish_grow", "std::vector<int>::_M_realloc_insert",
                        "<alloc::vec::Vec<T,A>>::push", "<str>::to_lowercase", "<[u8]>::to_vec",
                        "<T as alloc::string::ToString>::to_string",
                        "<std::sys::sync::condvar::futex::Condvar>::wait",
                        "<alloc::boxed::Box<dyn core::ops::function::FnOnce<(), Output = ()> + "
                        "core::marker::Send> as core::ops::function::FnOnce<()>>::call_once",
                        "<dyn core::any::Any>::is", "<&mut W as core::fmt::Write>::write_str",
                        "<u64 as core::fmt::Display>::fmt", "<&T as core::fmt::Display>::fmt",
                        "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",
                        "std[e28293b1aa0f68bd]::thread::sleep", "__gthread_mutex_lock",
                        "__gnu_cxx::new_allocator<int>::allocate", "__rustc::__rdl_alloc",
                        "__rustc::rust_begin_unwind", "panic_unwind::imp::panic",
                        "<alloc::boxed::Box<panic_unwind::imp::Exception>>::new",
                        "<<alloc::boxed::Box<str> as core::convert::From<&str>>::from as "
                        "core::ops::function::FnOnce<(&str,)>>::call_once"}) {
    EXPECT_TRUE(IsStandardLibraryFunction(f)) << f;
  }
  for (const char* f : {"main", "wait_for_work", "myapp::parse", "tokio::runtime::park::Inner::park",
                        "<myapp::Parser as core::iter::traits::iterator::Iterator>::next",
                        "<myapp::Tree<T>>::insert", "<dyn myapp::Handler>::handle",
                        "<myapp::Wrap<std::string::String> as core::clone::Clone>::clone",
                        "<T as myapp::Render>::render", "<str as myapp::StrExt>::words",
                        "<&myapp::Matrix as core::ops::arith::Mul>::mul", "stdx::run",
                        "corelib::init", "allocator_api2::alloc", "rustc_hash::hash",
                        "panic_handler::report",
                        "<<myapp::Config as core::default::Default>::default as "
                        "core::ops::function::FnOnce<()>>::call_once",
                        "pthread_cond_wait", "stdio_read", "<lambda()>", "core_dump",
                        // The program's trait, or another crate's, implemented for a standard
                        // type: the impl is in that crate (it was taken for the type's).
                        "<alloc::vec::Vec<alloc::string::String> as traitsite::Grow>::grow_by",
                        "<<alloc::vec::Vec<_> as serde::de::Deserialize>::deserialize::"
                        "VecVisitor<sj::Rec> as serde::de::Visitor>::visit_seq",
                        "<&mut [u8] as myapp::io::Sink>::put"}) {
    EXPECT_FALSE(IsStandardLibraryFunction(f)) << f;
  }
}

// A hostile folded line nests qualified paths without end: bounded, not a stack overflow.
TEST(LibraryFramesTest, RuntimeLibraryModules) {
  for (const char* m : {"libc.so.6", "libm.so.6", "libpthread.so.0", "libstdc++.so.6.0.30",
                        "libc++.so.1", "libc++abi.so.1.0", "libgcc_s.so.1",
                        "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
                        "libc.musl-x86_64.so.1", "ld-musl-x86_64.so.1", "librt.so.1", "libdl.so.2",
                        "libnativeprof_alloc.so"}) {
    EXPECT_TRUE(IsRuntimeLibraryModule(m)) << m;
  }
  for (const char* m : {"app", "libcrypto.so.3", "libcurl.so.4", "libfoo.so", "libc", "libm.a",
                        "libstdc++fs.so", "libcapnp.so", "libnativeprof_alloc_x.a", ""}) {
    EXPECT_FALSE(IsRuntimeLibraryModule(m)) << m;
  }
}

TEST(LibraryFramesTest, EndlessNestingIsBounded) {
  std::string nested;
  for (int i = 0; i < 100000; ++i) nested += "<";
  nested += "myapp::Foo as core::clone::Clone>::clone";
  (void)IsStandardLibraryFunction(nested);
}

}  // namespace
}  // namespace nativeprof::output
