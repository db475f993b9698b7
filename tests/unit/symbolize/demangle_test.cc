// Behaviour of symbolize/demangle.h beyond the vector tables: the profile form of C++ names
// (argument lists, return types and qualifiers dropped), clone suffixes, dispatch between Rust
// and C++, folded-frame escaping, and bounded output/recursion on adversarial input.
#include "symbolize/demangle.h"

#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::symbolize {
namespace {

std::string Profile(const std::string& mangled) { return DemangleSymbol(mangled, {}); }
std::string Full(const std::string& mangled) {
  return DemangleSymbol(mangled, DemangleOptions{.full_names = true});
}

TEST(DemangleSymbolTest, DropsArgumentListAndQualifiers) {
  EXPECT_EQ(Profile("_ZNK2ns3FooIiE3barEiPKc"), "ns::Foo<int>::bar");
  EXPECT_EQ(Full("_ZNK2ns3FooIiE3barEiPKc"), "ns::Foo<int>::bar(int, char const*) const");
  EXPECT_EQ(Profile("_ZNKR3Foo3getEv"), "Foo::get");
  EXPECT_EQ(Profile("_ZNO3Foo3getEv"), "Foo::get");
  EXPECT_EQ(Profile("_ZN3FooD2Ev"), "Foo::~Foo");
  EXPECT_EQ(Profile("_ZNSt6vectorIiSaIiEE9push_backEOi"),
            "std::vector<int, std::allocator<int> >::push_back");
}

TEST(DemangleSymbolTest, KeepsParenthesesInsideTemplateArguments) {
  EXPECT_EQ(Profile("_Z1fIPFviEEvT_"), "f<void (*)(int)>");
  EXPECT_EQ(Full("_Z1fIPFviEEvT_"), "void f<void (*)(int)>(void (*)(int))");
  EXPECT_EQ(Profile("_Z1fILi1EEv1AIXplT_cvingLf3f800000EEE"), "f<1>");
}

TEST(DemangleSymbolTest, HandlesAnonymousNamespacesOperatorsAndLambdas) {
  EXPECT_EQ(Profile("_ZN12_GLOBAL__N_13fooEv"), "(anonymous namespace)::foo");
  EXPECT_EQ(Profile("_ZN3FooclEv"), "Foo::operator()");
  EXPECT_EQ(Profile("_ZN3FooltERKS_"), "Foo::operator<");
  EXPECT_EQ(Profile("_ZlsRSoRKSs"), "operator<<");
  EXPECT_EQ(Profile("_ZStltI9file_pathSsEbRKSt4pairIT_T0_ES6_"),
            "std::operator< <file_path, std::basic_string<char, std::char_traits<char>, "
            "std::allocator<char> > >");
  EXPECT_EQ(Profile("_ZZ4mainENKUliE_clEi"), "main::{lambda(int)#1}::operator()");
}

TEST(DemangleSymbolTest, DropsFunctionPointerReturnTypes) {
  // c++filt: `int (*f<int>())()`, the name sits inside the return type's declarator.
  EXPECT_EQ(Profile("_Z1fIiEPFivEv"), "f<int>");
  EXPECT_EQ(Full("_Z1fIiEPFivEv"), "int (*f<int>())()");
  EXPECT_EQ(Profile("_ZN1A1fIiEEDTcl1gIT_EEEv"), "A::f<int>");
}

TEST(DemangleSymbolTest, LeavesTypeObjectsAndThunksReadable) {
  EXPECT_EQ(Profile("_ZTV3Foo"), "vtable for Foo");
  EXPECT_EQ(Profile("_ZTIPFviE"), "typeinfo for void (*)(int)");
  EXPECT_EQ(Profile("_ZThn8_N3Foo3barEv"), "non-virtual thunk to Foo::bar");
}

TEST(DemangleSymbolTest, CloneSuffixes) {
  EXPECT_EQ(Profile("_ZN2ns3fooEi.cold"), "ns::foo [clone .cold]");
  EXPECT_EQ(Full("_ZN2ns3fooEi.cold"), "ns::foo(int) [clone .cold]");
  EXPECT_EQ(Profile("_Z3foov.part.0.isra.0"), "foo [clone .part.0] [clone .isra.0]");
  // Plain C functions get the same notation.
  EXPECT_EQ(Profile("foo.cold"), "foo [clone .cold]");
  EXPECT_EQ(Profile("main.isra.0"), "main [clone .isra.0]");
  EXPECT_EQ(Profile("bar.constprop.0.isra.0"), "bar [clone .constprop.0] [clone .isra.0]");
  EXPECT_EQ(Profile("foo.lto_priv.0"), "foo [clone .lto_priv.0]");
  EXPECT_EQ(Full("foo.part.3"), "foo [clone .part.3]");
  // LLVM's ThinLTO suffix has hex digits libiberty rejects; the C++ part is still demangled.
  EXPECT_EQ(Profile("_Z3foov.llvm.9D1C9369"), "foo [clone .llvm.9D1C9369]");
  // Not clone suffixes: left alone.
  EXPECT_EQ(Profile("foo.Bar"), "foo.Bar");
  EXPECT_EQ(Profile("foo."), "foo.");
  EXPECT_EQ(Profile(".hidden"), ".hidden");
  EXPECT_EQ(Profile("memcpy@@GLIBC_2.14"), "memcpy@@GLIBC_2.14");
  EXPECT_EQ(Profile("_GLOBAL__sub_I_main.cc"), "_GLOBAL__sub_I_main.cc");
  // Go's names are dotted lowercase paths, not clones.
  for (const char* go : {"runtime.goexit.abi0", "main.main.func1", "runtime.mstart1",
                         "syscall.write", "internal/poll.(*FD).Write"}) {
    EXPECT_EQ(Profile(go), go);
  }
  // c++filt leaves C names alone, and so does the c++filt-compatible entry point.
  EXPECT_EQ(DemangleForDisplay("foo.cold", {}), "foo.cold");
}

TEST(DemangleSymbolTest, UnknownNamesUnchanged) {
  for (const char* name : {"main", "", "_Z", "_ZN4test", "_R", "__libc_start_main", "[unknown]"}) {
    EXPECT_EQ(Profile(name), name);
    EXPECT_EQ(DemangleForDisplay(name, {}), name);
  }
}

TEST(DemangleSymbolTest, RustAlternateByDefaultFullOnRequest) {
  const std::string legacy = "_ZN5alloc3vec12Vec$LT$T$GT$4push17h0123456789abcdefE";
  EXPECT_EQ(Profile(legacy), "alloc::vec::Vec<T>::push");
  EXPECT_EQ(Full(legacy), "alloc::vec::Vec<T>::push::h0123456789abcdef");
  EXPECT_EQ(Profile("_RNvCshGpAVYOtgW1_5hello4rust"), "hello::rust");
  EXPECT_EQ(Full("_RNvCshGpAVYOtgW1_5hello4rust"), "hello[cdfa367c26312547]::rust");
  EXPECT_EQ(DemangleRust("_RNvCshGpAVYOtgW1_5hello4rust", true), "hello::rust");
  EXPECT_EQ(DemangleRust("_Z3foov", true), std::nullopt);
  EXPECT_EQ(DemangleRust("main", false), std::nullopt);
  // Without the hash a `_ZN...E` name is also C++; both readings agree here.
  EXPECT_EQ(Profile("_ZN3foo3barE"), "foo::bar");
}

TEST(DemangleForDisplayTest, SkipsLeadingDotLikeCxxfilt) {
  EXPECT_EQ(DemangleForDisplay("._Z3foov", {}), ".foo()");
  EXPECT_EQ(DemangleForDisplay("$_Z3foov", {}), "foo()");
  EXPECT_EQ(DemangleForDisplay("._notmangled", {}), "._notmangled");
}

// --- adversarial input -------------------------------------------------------------------------

std::string Base62(uint64_t n) {
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[n % 62]);
    n /= 62;
  } while (n != 0);
  return s;
}

// `_RMC0` + k nested 2-tuples whose halves are backreferences to the level below: the printed
// name doubles with every level (2^k), the input grows linearly.
std::string ExponentialV0(int k) {
  std::string inner = "MC0" + std::string(k, 'T') + "p";
  for (int j = 0; j < k; ++j) inner += "B" + Base62(static_cast<uint64_t>(3 + k - j - 1)) + "_E";
  return "_R" + inner;
}

TEST(DemangleAdversarialTest, V0BackrefExplosionStopsAtOutputLimit) {
  std::string mangled = ExponentialV0(64);
  ASSERT_LT(mangled.size(), 400u);
  for (bool alternate : {false, true}) {
    std::optional<std::string> out = DemangleRust(mangled, alternate);
    ASSERT_TRUE(out.has_value());
    EXPECT_LE(out->size(), 1000000u + 32);
    EXPECT_GT(out->size(), 900000u);
    EXPECT_TRUE(absl::EndsWith(*out, "{size limit reached}"));
  }
  // Small instances print in full: 2^3 leaves.
  EXPECT_EQ(DemangleRust(ExponentialV0(3), true), "<(((_, _), (_, _)), ((_, _), (_, _)))>");
}

TEST(DemangleAdversarialTest, DeepNestingHitsRecursionLimitNotTheStack) {
  for (const std::string& mangled :
       {"_R" + std::string(100000, 'T') + std::string(100000, 'E'),
        "_RIC0" + std::string(100000, 'R') + "pE",
        "_R" +
            [] {
              std::string s;
              for (int i = 0; i < 50000; ++i) s += "Nv";
              return s + "C1a";
            }(),
        "_Z1f" + std::string(200000, 'P') + "v",
        "_Z1f" + std::string(50000, 'I') + "i" + std::string(50000, 'E') + "v"}) {
    EXPECT_EQ(DemangleSymbol(mangled, {}), mangled) << mangled.substr(0, 20);
    EXPECT_EQ(DemangleForDisplay(mangled, {.full_names = true}), mangled);
  }
}

TEST(DemangleAdversarialTest, BackrefsMustPointBackwards) {
  EXPECT_EQ(DemangleRust("_RB_", false), std::nullopt);         // points at itself
  EXPECT_EQ(DemangleRust("_RB5_", false), std::nullopt);        // forward
  EXPECT_EQ(DemangleRust("_RNvB1_3foo", false), std::nullopt);  // points at its own tag
  // A backward reference to something that is not a path is only found while printing, and
  // shown inline, as rustc-demangle does.
  EXPECT_EQ(DemangleRust("_RNvB0_3foo", false), "{invalid syntax}::foo");
  EXPECT_EQ(DemangleRust("_RIC7backrefKBa_E", false), std::nullopt);
}

TEST(DemangleAdversarialTest, HugeLengthsAndNumbersAreRejected) {
  for (const char* mangled :
       {"_RNvC1a99999999999999999999999999foo", "_RNvC2ab18446744073709551618xy",
        "_RNvC1au999999999999999999999", "_ZN99999999999999999999999fooE",
        "_RIC7integerKozzzzzzzzzzzzzzzzzzzz_E", "_RNvCszzzzzzzzzzzzzzzzzzzz_1a4main"}) {
    EXPECT_EQ(DemangleSymbol(mangled, {}), mangled);
  }
}

TEST(DemangleAdversarialTest, CxxSubstitutionExplosionIsCapped) {
  // Each parameter is B<previous, previous>: 2^k text from a few hundred bytes. c++filt would
  // print gigabytes; nativeprof gives the name back unchanged past 1 MB.
  std::string mangled = "_Z1f1A1BIS_S_E";
  for (int j = 2; j < 40; ++j) {
    std::string s =
        "S" + std::string(1, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[(j - 1) % 36]) + "_";
    if (j - 1 >= 36)
      s = "S1" + std::string(1, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[(j - 1) - 36]) + "_";
    mangled += "S0_I" + s + s + "E";
  }
  EXPECT_EQ(DemangleForDisplay(mangled, {}), mangled);
  EXPECT_EQ(DemangleSymbol(mangled, {}), mangled);
}

TEST(DemangleAdversarialTest, RandomV0LikeInputNeverExplodes) {
  std::mt19937 rng(12345);
  const std::string alphabet = "_0123456789BCDEGIKLMNQRSTUXYabcehjpsuvxyzW";
  for (int i = 0; i < 20000; ++i) {
    std::string s = "_R";
    size_t len = rng() % 64;
    for (size_t j = 0; j < len; ++j) s.push_back(alphabet[rng() % alphabet.size()]);
    for (bool full : {false, true}) {
      std::string out = DemangleSymbol(s, {.full_names = full});
      ASSERT_LE(out.size(), 1000000u + 64) << s;
    }
  }
}

}  // namespace
}  // namespace nativeprof::symbolize
