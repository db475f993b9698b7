// `nativeprof demangle` run as a process: arguments, stdin word scanning like c++filt, options,
// and agreement with binutils' c++filt on C++ names when it is installed.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_support.h"
#include "tools/exit_codes.h"

namespace nativeprof {
namespace {

using ::nativeprof::testing::NativeprofBinary;
using ::nativeprof::testing::RunCommand;

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

TEST(DemangleCliTest, DemanglesArgumentsOnePerLine) {
  auto r = RunCommand({NativeprofBinary(), "demangle", "_ZNK2ns3FooIiE3barEiPKc",
                       "_RNvCshGpAVYOtgW1_5hello4rust",
                       "_ZN5alloc3vec12Vec$LT$T$GT$4push17h0123456789abcdefE", "not_mangled"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "ns::Foo<int>::bar(int, char const*) const\n"
            "hello::rust\n"
            "alloc::vec::Vec<T>::push\n"
            "not_mangled\n");
  EXPECT_EQ(r.err, "");
}

TEST(DemangleCliTest, FullNamesKeepsRustHashesAndDisambiguators) {
  auto r =
      RunCommand({NativeprofBinary(), "demangle", "--full-names", "_RNvCshGpAVYOtgW1_5hello4rust",
                  "_ZN5alloc3vec12Vec$LT$T$GT$4push17h0123456789abcdefE"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello[cdfa367c26312547]::rust\nalloc::vec::Vec<T>::push::h0123456789abcdef\n");
}

TEST(DemangleCliTest, StdinWordsAreDemangledInPlace) {
  std::string input =
      "  #3 0x0000555 in _ZN3FooclEv (x.cc:3)\n"
      "_RNvC1a4main;_Z3foov.cold 17\n"
      "plain text, no symbols\n"
      "at _ZN9backtrace3foo17hbb467fcdaea5d79bE.llvm.A5310EB9@@16 and _RC3foo.llvm.9D1C9369@@16\n"
      "_Z1fv@@GLIBC_2.2.5\n"
      "last line without newline _Z1fv";
  auto r = RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat("printf '%s' ", ShellQuote(input), " | ", NativeprofBinary(), " demangle")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "  #3 0x0000555 in Foo::operator()() (x.cc:3)\n"
            "a::main;foo() [clone .cold] 17\n"
            "plain text, no symbols\n"
            "at backtrace::foo and foo\n"
            "f()@@GLIBC_2.2.5\n"
            "last line without newline f()");
}

TEST(DemangleCliTest, HelpAndBadOption) {
  auto help = RunCommand({NativeprofBinary(), "demangle", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, ::testing::HasSubstr("usage: nativeprof demangle"));
  auto bad = RunCommand({NativeprofBinary(), "demangle", "--bogus"});
  EXPECT_EQ(bad.exit_code, tools::kExitUsage);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("nativeprof: "));
  EXPECT_EQ(bad.out, "");
}

TEST(DemangleCliTest, SameAsCxxfiltOnCppVectorsThroughStdin) {
  if (access("/usr/bin/c++filt", X_OK) != 0) GTEST_SKIP() << "binutils' c++filt is not installed";
  std::string tsv = ::nativeprof::testing::SourcePath("tests/testdata/demangle/cpp.tsv");
  std::string cut = absl::StrCat("cut -f1 ", ShellQuote(tsv));
  auto ours = RunCommand({"/bin/sh", "-c", cut + " | " + NativeprofBinary() + " demangle"});
  auto theirs = RunCommand({"/bin/sh", "-c", cut + " | c++filt"});
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  std::vector<std::string> a = absl::StrSplit(ours.out, '\n');
  std::vector<std::string> b = absl::StrSplit(theirs.out, '\n');
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "line " << i + 1;
}

}  // namespace
}  // namespace nativeprof
