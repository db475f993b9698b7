#include "output/library_frames.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace nativeprof::output {
namespace {

bool UnderStandardLibrary(absl::string_view path) {
  // `std[e28293b1aa0f68bd]::` is a v0 name with --full-names. libstdc++ has helpers outside
  // std:: that std::mutex and std::condition_variable call inline (__gthread_mutex_lock).
  for (const absl::string_view crate : {"std", "core", "alloc"}) {
    absl::string_view rest = path;
    if (absl::ConsumePrefix(&rest, crate) && (absl::StartsWith(rest, "::") ||
                                              absl::StartsWith(rest, "["))) {
      return true;
    }
  }
  return absl::StartsWith(path, "__gthread_") || absl::StartsWith(path, "__gnu_cxx::") ||
         absl::StartsWith(path, "__cxxabiv1::");
}

// `myapp::Matrix` for `&myapp::Matrix`, `&mut myapp::Matrix`, `*const myapp::Matrix`.
absl::string_view Pointee(absl::string_view type) {
  while (absl::ConsumePrefix(&type, "&") || absl::ConsumePrefix(&type, "*const ") ||
         absl::ConsumePrefix(&type, "*mut ")) {
    absl::ConsumePrefix(&type, "mut ");
  }
  return type;
}

bool IsPlainIdentifier(absl::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// `<Type>::f` or `<Type as Trait>::f`, given what follows the '<': the type and the trait (empty
// for an inherent method).
struct QualifiedPath {
  absl::string_view self_type;
  absl::string_view trait;
};
QualifiedPath SplitQualifiedPath(absl::string_view rest) {
  int depth = 0;
  size_t as = absl::string_view::npos;
  size_t end = rest.size();
  for (size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    if (c == '<' || c == '[' || c == '(') {
      ++depth;
    } else if (c == ']' || c == ')' || (c == '>' && (i == 0 || rest[i - 1] != '-'))) {
      if (depth == 0) {  // the '>' that closes the path
        end = i;
        break;
      }
      --depth;
    } else if (depth == 0 && as == absl::string_view::npos &&
               absl::StartsWith(rest.substr(i), " as ")) {
      as = i;
    }
  }
  if (as == absl::string_view::npos) return {rest.substr(0, end), {}};
  return {rest.substr(0, as), rest.substr(as + 4, end - (as + 4))};
}

}  // namespace

bool IsStandardLibraryFunction(absl::string_view function) {
  if (UnderStandardLibrary(function)) return true;
  if (!absl::ConsumePrefix(&function, "<")) return false;
  const QualifiedPath path = SplitQualifiedPath(function);
  // A trait of the program's own (`<T as myapp::Render>::render`) is implemented by the program.
  if (!path.trait.empty() && !UnderStandardLibrary(path.trait)) return false;
  absl::string_view self = path.self_type;
  if (absl::ConsumePrefix(&self, "dyn ")) return UnderStandardLibrary(self);
  // A function item as the type (`<<Box<str> as From<&str>>::from as FnOnce<(&str,)>>::call_once`).
  if (absl::StartsWith(self, "<")) return IsStandardLibraryFunction(self);
  // A reference or pointer is its pointee's (`<&myapp::Matrix as core::ops::Mul>::mul` is the
  // program's operator). Slices, tuples and bare identifiers: primitives (`str`, `u64`) and
  // generic parameters (`T`). The program's own types always carry their crate's path.
  self = Pointee(self);
  return UnderStandardLibrary(self) || absl::StartsWith(self, "[") ||
         absl::StartsWith(self, "(") || IsPlainIdentifier(self);
}

}  // namespace nativeprof::output
