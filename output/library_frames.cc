#include "output/library_frames.h"

#include <string>

#include "absl/strings/match.h"
#include "output/module_key.h"

namespace nativeprof::output {

bool IsStandardLibraryFunction(absl::string_view function) {
  // libstdc++'s helpers outside std:: that std::mutex and std::condition_variable call inline.
  if (absl::StartsWith(function, "__gthread_")) return true;
  // The crate of the path, of a qualified path's self type, or, for a generic or primitive self
  // type, of its trait; a v0 crate disambiguator dropped (ModuleKey's CrateOf).
  const std::string crate = CrateOf(function);
  if (crate == "std" || crate == "core" || crate == "alloc" || crate == "__gnu_cxx" ||
      crate == "__cxxabiv1") {
    return true;
  }
  // No crate at all in a qualified path: an inherent method of a primitive, slice or tuple
  // (`<str>::to_lowercase`, `<[u8]>::to_vec`), which only the standard library defines.
  return crate.empty() && absl::StartsWith(function, "<") && absl::StrContains(function, ">::");
}

}  // namespace nativeprof::output
