#include "output/module_key.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "symbolize/profile_builder.h"

namespace nativeprof::output {
namespace {

// Index of the '>' closing the '<' at `open`, or npos. Counts only angle brackets: a Rust or C++
// display name has no '>' inside string literals we care about, and "->" only inside
// fn-pointer types, which we skip over as part of the bracketed text either way.
size_t MatchingAngle(absl::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '<') {
      ++depth;
    } else if (s[i] == '>' && !(i > 0 && s[i - 1] == '-')) {
      if (--depth == 0) return i;
    }
  }
  return absl::string_view::npos;
}

// Position of " as " at bracket depth 0 of `s` (the inside of "<...>"), or npos.
size_t TopLevelAs(absl::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(' || c == '[') {
      ++depth;
    } else if ((c == '>' && !(i > 0 && s[i - 1] == '-')) || c == ')' || c == ']') {
      --depth;
    } else if (depth == 0 && absl::StartsWith(s.substr(i), " as ")) {
      return i;
    }
  }
  return absl::string_view::npos;
}

// The first path segment of a plain path "a::b<...>::c", "" when the name has no "::" right
// after its first identifier (a C name, "operator new", "(anonymous namespace)::f").
std::string FirstSegment(absl::string_view name) {
  size_t end = 0;
  while (end < name.size()) {
    const char c = name[end];
    if (c == ':' || c == '<' || c == '(' || c == ' ' || c == ',' || c == '>' || c == ')') break;
    if (c == '[') {
      // A v0 crate disambiguator "core[846817f741e54dfd]" (full demangled form) ends the crate
      // name; "[libfoo.so]"-style placeholders and slices start with '[' and have no crate.
      if (end == 0) return "";
      const size_t close = name.find(']', end);
      if (close == absl::string_view::npos) return "";
      if (!absl::StartsWith(name.substr(close + 1), "::")) return "";
      return std::string(name.substr(0, end));
    }
    ++end;
  }
  if (end == 0 || !absl::StartsWith(name.substr(end), "::")) return "";
  return std::string(name.substr(0, end));
}

// Qualified paths nest ("<<A as B>::C as D>::f"); real names nest a few levels, a hostile folded
// line could nest a million, which would exhaust the stack. Deeper than this has no crate.
constexpr int kMaxQualifiedDepth = 32;

std::string CrateOfQualified(absl::string_view name, int depth);

std::string CrateOfType(absl::string_view type, int depth) {
  for (bool stripped = true; stripped;) {
    stripped = absl::ConsumePrefix(&type, "&mut ") || absl::ConsumePrefix(&type, "&") ||
               absl::ConsumePrefix(&type, "*const ") || absl::ConsumePrefix(&type, "*mut ") ||
               absl::ConsumePrefix(&type, "dyn ") || absl::ConsumePrefix(&type, "'_ ");
  }
  return CrateOfQualified(type, depth + 1);
}

std::string CrateOfQualified(absl::string_view name, int depth) {
  if (!absl::StartsWith(name, "<")) return FirstSegment(name);
  if (depth > kMaxQualifiedDepth) return "";
  // A qualified path: "<Self as Trait>::item" or "<Self>::item" (an inherent impl, v0).
  const size_t close = MatchingAngle(name, 0);
  if (close == absl::string_view::npos) return "";
  const absl::string_view inside = name.substr(1, close - 1);
  const size_t as = TopLevelAs(inside);
  std::string crate = CrateOfType(inside.substr(0, as), depth);
  if (as == absl::string_view::npos) {
    // An inherent method of a type with no path (`<u64>::wrapping_mul`, `<str>::to_lowercase`,
    // `<[T]>::sort`): only the standard library may define those, most of them in core.
    // (Not a nested qualified path, whose crate is "" only when it is too deep to read.)
    if (crate.empty() && !absl::StartsWith(inside, "<") &&
        absl::StartsWith(name.substr(close + 1), "::")) {
      return "core";
    }
    return crate;
  }
  // The impl is in Self's crate or the trait's (Rust's orphan rule): the trait's when Self is the
  // standard library's and the trait is not (the program's trait for a Vec, serde's Deserialize
  // for one), since the standard library implements no other crate's trait.
  if (crate.empty() || IsStandardCrate(crate)) {
    std::string trait = CrateOfType(inside.substr(as + 4), depth);
    if (crate.empty() || (!trait.empty() && !IsStandardCrate(trait))) crate = std::move(trait);
  }
  return crate;
}

}  // namespace

bool IsStandardCrate(absl::string_view crate) {
  // Rust's runtime crates besides std, core and alloc: `__rustc` holds the standard library's
  // internal symbols since Rust 1.9x (`__rustc::__rust_alloc`, `__rustc::rust_begin_unwind`),
  // and a panic allocates its payload in panic_unwind. C++'s std and libstdc++'s namespaces.
  static const absl::string_view kCrates[] = {"std",           "core",        "alloc",
                                              "__gnu_cxx",     "__cxxabiv1",  "__rustc",
                                              "panic_unwind",  "panic_abort", "std_detect",
                                              "compiler_builtins"};
  for (absl::string_view k : kCrates) {
    if (crate == k) return true;
  }
  return false;
}

std::string CrateOf(absl::string_view name) { return CrateOfQualified(name, 0); }

std::string ModuleKey(absl::string_view folded_name, absl::string_view module) {
  if (absl::EndsWith(folded_name, "_[k]")) return "[kernel]";
  if (absl::EndsWith(folded_name, "_[j]")) return "[jit]";
  if (absl::StrContains(module, ".so")) return std::string(module);
  absl::string_view name = folded_name;
  absl::ConsumeSuffix(&name, "_[i]");
  // The off-CPU views' own leaves are no module's: they stay as they are.
  if (symbolize::IsTimePseudoFrame(name)) return std::string(name);
  // "[libfoo.so]" / "[hotbin]": a module the symbolizer found no name in.
  if (name.size() > 2 && name.front() == '[' && name.back() == ']' && name != "[unknown]") {
    return std::string(name.substr(1, name.size() - 2));
  }
  std::string crate = CrateOf(name);
  if (!crate.empty()) return crate;
  if (!module.empty()) return std::string(module);
  return "[unknown]";
}

}  // namespace nativeprof::output
