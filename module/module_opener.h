// Opens the file behind a mapped module, the one way for unwind/ (CFI) and symbolize/ (names):
// one candidate order and one identity check, so a module is read from the same file by both or
// refused by both. Candidates, first that opens and passes wins:
//   1. an fd held since the mapping was seen (HoldModuleFd), the mapped file even if replaced;
//   2. /proc/PID/map_files/START-END of a live process: the mapped inode itself (needs
//      CAP_SYS_ADMIN, or CAP_CHECKPOINT_RESTORE since Linux 5.9);
//   3. /proc/FIRST_PID/root/PATH: the path in the mount namespace of the process that mapped it;
//   4. PATH itself.
// Identity: the build-id when the kernel reported one for the mapping, else the inode and device.
// A file that fails it (rebuilt or replaced since it was mapped) is never used. Any thread; does
// file I/O, so the unwinder calls it once per module, never per sample.
#ifndef NATIVEPROF_MODULE_MODULE_OPENER_H_
#define NATIVEPROF_MODULE_MODULE_OPENER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/scoped_fd.h"
#include "module/elf_image.h"
#include "sampler/module_registry.h"

namespace nativeprof::module {

// What is known about one mapped module when it is opened.
struct ModuleRequest {
  const sampler::ModuleInfo* info = nullptr;  // the module as the kernel reported it; required
  // A live process that maps it now and its mapping there (avma [start_avma, end_avma)), for
  // /proc/PID/map_files; pid 0: none (the target has exited).
  int32_t pid = 0;
  uint64_t start_avma = 0, end_avma = 0;
  // An fd held since the mapping was seen (HoldModuleFd); -1: none. Duplicated, not taken.
  int held_fd = -1;
};

// The paths tried after the held fd, in order (candidates 2-4 above). For tests and messages.
std::vector<std::string> CandidatePaths(const ModuleRequest& request);

// What the identity check compares of a file. `build_id` is nullopt when the file was not parsed
// (HoldModuleFd checks with fstat only; its fd is checked in full when opened).
struct FileIdentity {
  uint64_t dev = 0;
  uint64_t inode = 0;
  std::optional<std::string> build_id;  // lower-case hex; "" for a file without one
};
FileIdentity IdentityOf(const ElfImage& image);

// OK when `file` may be the file `mapped` names: equal build-ids when the mapping has one (and
// the file's is known), else equal inode and device when the mapping has an inode. Errors:
// kFailedPrecondition naming what differs ("build-id 12ab was mapped, the file has 34cd", "its
// inode changed").
absl::Status CheckIdentity(const sampler::ModuleInfo& mapped, const FileIdentity& file);

// Opens the module's ELF image from the first candidate that opens and passes CheckIdentity. The
// image is named by the module's path on disk (PathOnDisk), whatever candidate it came from, so
// messages and debuglink lookups use the real path. Errors: kInvalidArgument for a module without
// a file (kernel, [vdso], anonymous memory) or a file that is not ELF; kFailedPrecondition when a
// file was found but none is the mapped one (CheckIdentity's message); else the last open error
// (kNotFound, kPermissionDenied, ...).
absl::StatusOr<std::unique_ptr<ElfImage>> OpenModuleImage(const ModuleRequest& request);

// Opens an fd to the mapped file while the mapping is live, for OpenModuleImage to use later even
// if the path is replaced or deleted meanwhile: /proc/PID/map_files, else the path if its inode
// and device pass CheckIdentity (fstat only, no parsing: cheap enough for the drain thread).
// Returns an invalid fd when the module has no file or neither opens.
ScopedFd HoldModuleFd(const sampler::ModuleInfo& info, int32_t pid, uint64_t start_avma,
                      uint64_t end_avma);

}  // namespace nativeprof::module

#endif  // NATIVEPROF_MODULE_MODULE_OPENER_H_
