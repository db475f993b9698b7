#include "output/module_key.h"

#include <string>

#include "gtest/gtest.h"

namespace nativeprof::output {
namespace {

struct Case {
  const char* name;
  const char* want;
};

TEST(CrateOfTest, RustLegacyDemangledNames) {
  const Case cases[] = {
      {"hotlib::fnv_checksum", "hotlib"},
      {"hotlib::fnv_checksum::h0123456789abcdef", "hotlib"},  // hash kept by --full-names
      {"hotlib::parallel_sum::{{closure}}", "hotlib"},
      {"hotlib::parallel_sum::{{closure}}::{{closure}}", "hotlib"},
      {"core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "core"},
      {"alloc::vec::Vec<T,A>::push", "alloc"},
      {"alloc::raw_vec::RawVec<T,A>::reserve_for_push", "alloc"},
      {"std::rt::lang_start::{{closure}}", "std"},
      {"std::sys_common::backtrace::__rust_begin_short_backtrace", "std"},
      {"core::iter::range::<impl core::iter::traits::iterator::Iterator for "
       "core::ops::range::Range<A>>::next",
       "core"},
      {"<hotlib::Foo as core::fmt::Display>::fmt", "hotlib"},
      {"<hotlib::Report<u32> as core::fmt::Debug>::fmt", "hotlib"},
      {"<alloc::boxed::Box<F,A> as core::ops::function::FnOnce<Args>>::call_once", "alloc"},
      {"<&std::io::stdio::Stdout as std::io::Write>::write_fmt", "std"},
      {"<&mut W as core::fmt::Write>::write_str", "core"},  // generic self type: the trait's
      {"<T as alloc::slice::hack::ConvertVec>::to_vec", "alloc"},
      {"<[T] as core::fmt::Debug>::fmt", "core"},
      {"<(A,B) as core::cmp::PartialEq>::eq", "core"},
      {"<dyn core::any::Any as core::fmt::Debug>::fmt", "core"},
      {"<*const T as core::fmt::Pointer>::fmt", "core"},
      // Inherent methods of types without a path: only the standard library defines them.
      {"<u64>::wrapping_mul", "core"},
      {"<str>::to_lowercase", "core"},
      {"<[hotlib::Foo]>::sort_unstable", "core"},
      {"<*const u8>::add", "core"},
      {"<u64 as hotlib::Mix>::mix", "hotlib"},
      {"<lambda>", ""},
      {"<<hotlib::Foo as core::iter::IntoIterator>::IntoIter as core::iter::Iterator>::next",
       "hotlib"},
      {"<alloc::boxed::Box<alloc::boxed::FnBox<A, Output=R> + 'a> as "
       "core::ops::function::FnOnce<A>>::call_once",
       "alloc"},
      {"hotlib::fnv_checksum (src/lib.rs:42)", "hotlib"},  // --lines
  };
  for (const Case& c : cases) EXPECT_EQ(CrateOf(c.name), c.want) << c.name;
}

TEST(CrateOfTest, RustV0DemangledNames) {
  const Case cases[] = {
      // rustc-demangle's full form keeps the crate disambiguator in brackets.
      {"alloc[f15a878b47eb696b]::alloc::box_free::<dyn alloc[f15a878b47eb696b]::boxed::FnBox<(), "
       "Output = ()>>",
       "alloc"},
      {"cc[4d6468d6c9fd4bb3]::spawn::{closure#0}::{closure#0}", "cc"},
      {"<core[846817f741e54dfd]::slice::Iter<u8> as core[846817f741e54dfd]::iter::iterator::"
       "Iterator>::rposition::<core[846817f741e54dfd]::slice::memchr::memrchr::{closure#1}>::"
       "{closure#0}",
       "core"},
      {"<mio[1888792e1a78739]::sys::unix::selector::epoll::Selector>::select", "mio"},
      // The alternate form ({:#}), which nativeprof prints.
      {"<core::slice::Iter<u8> as core::iter::iterator::Iterator>::rposition::<core::slice::"
       "memchr::memrchr::{closure#1}>::{closure#0}",
       "core"},
      {"<mio::sys::unix::selector::epoll::Selector>::select", "mio"},
      {"hotlib::checksum::fold::<u64>", "hotlib"},
      {"<hotlib::Table as core::ops::index::Index<usize>>::index", "hotlib"},
      {"utf8_idents::საჭმელად_გემრიელი_სადილი", "utf8_idents"},
  };
  for (const Case& c : cases) EXPECT_EQ(CrateOf(c.name), c.want) << c.name;
}

TEST(CrateOfTest, CppNames) {
  const Case cases[] = {
      {"std::vector<int>::push_back", "std"},
      {"std::vector<int, std::allocator<int> >::push_back(int const&)", "std"},
      {"__gnu_cxx::__normal_iterator<int*, std::vector<int> >::operator++", "__gnu_cxx"},
      {"absl::debian3::flat_hash_map<int, int>::find", "absl"},
      {"nativeprof::sampler::RingBuffer::Drain", "nativeprof"},
      {"std::_Function_handler<void (), main::{lambda()#1}>::_M_invoke", "std"},
      {"(anonymous namespace)::Spin", ""},
      {"operator new(unsigned long)", ""},
      {"main", ""},
      {"hash_block", ""},
      {"__libc_start_main", ""},
      {"[unknown]", ""},
      {"[libfoo.so]", ""},
      {"", ""},
      {"<", ""},
      {"a::", "a"},
      {"::f", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(CrateOf(c.name), c.want) << c.name;
}

TEST(ModuleKeyTest, KernelAndJitFramesIgnoreTheModule) {
  EXPECT_EQ(ModuleKey("ksys_write_[k]", ""), "[kernel]");
  EXPECT_EQ(ModuleKey("ksys_write_[k]", "vmlinux"), "[kernel]");
  EXPECT_EQ(ModuleKey("jit_hot_loop_[j]", "jitted-123.so"), "[jit]");
}

// The off-CPU views' synthetic leaves are no module (they were "waiting for CPU", a module).
TEST(ModuleKeyTest, OffCpuLeavesStayAsTheyAre) {
  EXPECT_EQ(ModuleKey("[waiting for CPU]", ""), "[waiting for CPU]");
  EXPECT_EQ(ModuleKey("[off-CPU, stack not sampled]", ""), "[off-CPU, stack not sampled]");
  EXPECT_EQ(ModuleKey("[libfoo.so]", ""), "libfoo.so");
}

TEST(ModuleKeyTest, SharedObjectsWinOverTheName) {
  EXPECT_EQ(ModuleKey("malloc", "libc.so.6"), "libc.so.6");
  EXPECT_EQ(ModuleKey("hotlib::fnv_checksum", "libhotlib.so"), "libhotlib.so");
  EXPECT_EQ(ModuleKey("std::vector<int>::push_back_[i]", "libfoo.so.1.2"), "libfoo.so.1.2");
}

TEST(ModuleKeyTest, ExecutableCodeGoesByCrateOrNamespace) {
  EXPECT_EQ(ModuleKey("hotlib::fnv_checksum", "hotbin"), "hotlib");
  EXPECT_EQ(ModuleKey("hotlib::fnv_checksum", ""), "hotlib");
  EXPECT_EQ(ModuleKey("core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "hotbin"), "core");
  EXPECT_EQ(ModuleKey("<hotlib::Foo as core::fmt::Display>::fmt", "hotbin"), "hotlib");
  EXPECT_EQ(ModuleKey("std::vector<int>::push_back", "app"), "std");
  // Inlined frames by their own name.
  EXPECT_EQ(ModuleKey("core::iter::range::<impl core::iter::traits::iterator::Iterator for "
                      "core::ops::range::Range<A>>::next_[i]",
                      "hotbin"),
            "core");
  EXPECT_EQ(ModuleKey("memcpy_[i]", "hotbin"), "hotbin");
}

TEST(ModuleKeyTest, PlainCNamesGoToTheirFileOrUnknown) {
  EXPECT_EQ(ModuleKey("main", "hotbin"), "hotbin");
  EXPECT_EQ(ModuleKey("__vdso_clock_gettime", "[vdso]"), "[vdso]");
  EXPECT_EQ(ModuleKey("main", ""), "[unknown]");
  EXPECT_EQ(ModuleKey("[unknown]", ""), "[unknown]");
  // Placeholders of a module without symbols name it.
  EXPECT_EQ(ModuleKey("[libfoo.so]", ""), "libfoo.so");
  EXPECT_EQ(ModuleKey("[hotbin]", ""), "hotbin");
}

TEST(CrateOfTest, HostileNestingNeitherOverflowsTheStackNorTakesLong) {
  const std::string deep = std::string(300000, '<') + "a::b" + std::string(300000, '>') + "::f";
  EXPECT_EQ(CrateOf(deep), "");
  EXPECT_EQ(ModuleKey(deep, "prog"), "prog");
  EXPECT_EQ(CrateOf("<<<hotlib::A as core::X>::B as core::Y>::C as core::Z>::f"), "hotlib");
}

}  // namespace
}  // namespace nativeprof::output
