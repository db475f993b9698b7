#include "output/library_frames.h"

#include <string>

#include "absl/strings/match.h"
#include "output/module_key.h"

namespace nativeprof::output {

bool IsStandardLibraryFunction(absl::string_view function) {
  // libstdc++'s helpers outside std:: that std::mutex and std::condition_variable call inline.
  if (absl::StartsWith(function, "__gthread_")) return true;
  // The crate of the path, of a qualified path's self type, or, for a generic or primitive self
  // type, of its trait (core for a primitive's inherent method, `<str>::to_lowercase`); a v0
  // crate disambiguator dropped (ModuleKey's CrateOf).
  return IsStandardCrate(CrateOf(function));
}

bool IsRuntimeLibraryModule(absl::string_view basename) {
  // The name up to ".so": "libc.so.6" -> "libc", "libstdc++.so.6.0.30" -> "libstdc++".
  const size_t so = basename.find(".so");
  if (so == absl::string_view::npos) return false;
  const absl::string_view stem = basename.substr(0, so);
  // libnativeprof_alloc is record --alloc's preload, whose malloc and free stand between the
  // program and glibc's (tools/alloc_setup.h's kAllocPreloadName): a lock glibc waits for under
  // them is the call the program made.
  static const absl::string_view kStems[] = {"libc",      "libm",     "libpthread",
                                             "libdl",     "librt",    "libstdc++",
                                             "libc++",    "libc++abi", "libgcc_s",
                                             "libnativeprof_alloc"};
  for (absl::string_view k : kStems) {
    if (stem == k) return true;
  }
  // The loader (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-linux.so.2) and musl's libc,
  // which is its loader too (ld-musl-x86_64.so.1, which libc.musl-x86_64.so.1 links to).
  return absl::StartsWith(stem, "ld-linux") || absl::StartsWith(stem, "ld-musl-") ||
         absl::StartsWith(stem, "libc.musl-");
}

}  // namespace nativeprof::output
