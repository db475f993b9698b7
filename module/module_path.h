// The one list of paths the kernel reports for mappings with no file behind them ("[heap]",
// "//anon", "/memfd:...", "anon_inode:...", SysV shared memory ...), and the vdso, which has an
// ELF image but no file. unwind/ and symbolize/ both ask here, so a mapping is either opened by
// both or by neither. Pure; any thread.
#ifndef NATIVEPROF_MODULE_MODULE_PATH_H_
#define NATIVEPROF_MODULE_MODULE_PATH_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof::module {

enum class PathKind : uint8_t {
  kFile,    // a file to open (perhaps deleted: "... (deleted)")
  kVdso,    // "[vdso]": the image is read from process memory (module/vdso.h)
  kNoFile,  // anonymous or special memory: "", "[heap]", "[stack]", "[anon:...]", "[vsyscall]",
            // "//anon", "/memfd:", "anon_inode:", "/dev/zero", "/SYSV..."
};

// What kind of mapping the kernel-reported `path` names.
PathKind KindOfPath(absl::string_view path);

// `path` without the " (deleted)" the kernel appends to unlinked files: the path the file had,
// from which the debug files are searched.
std::string PathOnDisk(absl::string_view path);

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_MODULE_PATH_H_
