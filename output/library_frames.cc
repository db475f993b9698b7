#include "output/library_frames.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace nativeprof::output {
namespace {

bool UnderStandardLibrary(absl::string_view path) {
  return absl::StartsWith(path, "std::") || absl::StartsWith(path, "core::") ||
         absl::StartsWith(path, "alloc::");
}

bool IsPlainIdentifier(absl::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// The self type of `<Type>::f` or `<Type as Trait>::f`, given what follows the '<'.
absl::string_view SelfType(absl::string_view rest) {
  int depth = 0;
  for (size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    if (c == '<' || c == '[' || c == '(') {
      ++depth;
    } else if (c == ']' || c == ')' || (c == '>' && (i == 0 || rest[i - 1] != '-'))) {
      if (depth == 0) return rest.substr(0, i);  // the '>' closing `<Type>`
      --depth;
    } else if (depth == 0 && absl::StartsWith(rest.substr(i), " as ")) {
      return rest.substr(0, i);
    }
  }
  return rest;
}

}  // namespace

bool IsStandardLibraryFunction(absl::string_view function) {
  if (UnderStandardLibrary(function)) return true;
  if (!absl::ConsumePrefix(&function, "<")) return false;
  absl::string_view self = SelfType(function);
  // Slices, references, tuples, pointers, and bare identifiers: primitives (`str`, `u64`) and
  // generic parameters (`T`). The program's own types always carry their crate's path.
  if (absl::ConsumePrefix(&self, "dyn ")) return UnderStandardLibrary(self);
  // A function item as the type (`<<Box<str> as From<&str>>::from as FnOnce<(&str,)>>::call_once`).
  if (absl::StartsWith(self, "<")) return IsStandardLibraryFunction(self);
  return UnderStandardLibrary(self) || absl::StartsWith(self, "[") || absl::StartsWith(self, "&") ||
         absl::StartsWith(self, "(") || absl::StartsWith(self, "*") ||
         IsPlainIdentifier(self);
}

}  // namespace nativeprof::output
