#include "module/module_path.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace nativeprof::module {

PathKind KindOfPath(absl::string_view path) {
  if (path == "[vdso]") return PathKind::kVdso;
  // Every other bracketed name ([heap], [stack], [anon:...], [vsyscall], [vvar], [uprobes]) is
  // memory without an ELF image; SysV segments are files of no module worth opening (JIT code in
  // them is named through perf maps).
  if (absl::StartsWith(path, "/memfd:")) return PathKind::kMemfd;
  if (path.empty() || path[0] == '[' || absl::StartsWith(path, "//anon") ||
      absl::StartsWith(path, "anon_inode:") ||
      absl::StartsWith(path, "/dev/zero") || absl::StartsWith(path, "/SYSV")) {
    return PathKind::kNoFile;
  }
  return PathKind::kFile;
}

std::string PathOnDisk(absl::string_view path) {
  return std::string(absl::StripSuffix(path, " (deleted)"));
}

}  // namespace nativeprof::module
