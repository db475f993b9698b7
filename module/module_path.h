// The one list of paths the kernel reports for mappings with no file behind them ("[heap]",
// "//anon", "anon_inode:...", SysV shared memory ...), the vdso, which has an ELF image but no
// file, and memfd files, which have one only while they are mapped. unwind/ and symbolize/ both
// ask here, so a mapping is either opened by both or by neither. Pure; any thread.
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
            // "//anon", "anon_inode:", "/dev/zero", "/SYSV..."
  // "/memfd:NAME (deleted)": a file that exists only in memory. A program run from one (fexecve,
  // as container runtimes and packers do) is an ELF image reached through
  // /proc/PID/map_files while it is mapped; other memfd code (a JIT's double mapping) is not,
  // and is named through perf maps like anonymous memory.
  kMemfd,
};

// What kind of mapping the kernel-reported `path` names.
PathKind KindOfPath(absl::string_view path);
// Whether a mapping of this kind may be an ELF file to open (a memfd only through its mapping).
inline bool HasFile(PathKind kind) { return kind == PathKind::kFile || kind == PathKind::kMemfd; }

// `path` without the " (deleted)" the kernel appends to unlinked files: the path the file had,
// from which the debug files are searched.
std::string PathOnDisk(absl::string_view path);

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_MODULE_PATH_H_
