// Small-file reading for /proc and /sys, and atomic file writes (temp file + fsync + rename) for
// every output nativeprof produces. Callable from any thread; not signal-safe.
#ifndef NATIVEPROF_BASE_FILE_UTIL_H_
#define NATIVEPROF_BASE_FILE_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/scoped_fd.h"

namespace nativeprof {

// The largest file ReadSmallFile reads by default: far above any /proc or /sys file it is used
// for, far below what would exhaust memory.
inline constexpr size_t kMaxSmallFileBytes = size_t{64} << 20;

// The directory part of `path` ("." when it has none, "/" for a file in the root), and its last
// component; plain string operations, no file system access.
std::string DirectoryOf(const std::string& path);
// The target a symbolic link points to (/proc/self/exe, /proc/self/fd/N), as stored; "" when
// `path` is not a link or cannot be read.
std::string ReadLinkOrEmpty(const std::string& path);
absl::string_view BaseNameOf(absl::string_view path);
// The file `path` names however spelled ("a.folded", "./a.folded", "$PWD/a.folded", through a
// symlinked directory), whether or not it exists yet: equal for two paths to one file.
std::string CanonicalFileName(const std::string& path);
// True when both paths name one existing regular file, however spelled or hard-linked: writing
// one replaces the other. Never for devices or pipes: /dev/stdin and /dev/stdout on one terminal
// are one file, but writing one does not replace what is read from the other.
bool SameRegularFile(const std::string& a, const std::string& b);
// The identity SameRegularFile compares (device, inode), for comparing one path with many
// without stat()ing it for each; nullopt for a path that is not an existing regular file.
struct RegularFileId {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const RegularFileId&) const = default;
};
std::optional<RegularFileId> RegularFileIdOf(const std::string& path);

// Fails (kFailedPrecondition: "PATH is an ELF executable, not a profile") when `path` is an
// existing regular file that is plainly not a profile, so an output written there would destroy
// something else: an ELF file (a program, a library, an object file, a core dump) or a script
// ("#!"). Reads at most the first 18 bytes. A path that does not exist, is no regular file, is a
// stream (IsStreamPath: written into, never replaced) or cannot be read passes.
absl::Status CheckNotOverwritingNonProfile(const std::string& path);

// Reads a whole file of at most `max_bytes`. /proc files report size 0, so this reads until EOF
// rather than trusting stat(). A FIFO without a writer reads as empty instead of blocking open.
// Errors: the ErrnoToStatus code of open/read (kNotFound, kPermissionDenied, ...);
// kResourceExhausted when the file holds more than `max_bytes` (a regular file's size is checked
// before anything is allocated for it, so a sparse or endless file costs no memory).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          size_t max_bytes = kMaxSmallFileBytes);

// How much of a file ReadSmallFile's `check_head` sees before the rest is read.
inline constexpr size_t kFileHeadBytes = 64 << 10;

// ReadSmallFile that first shows `check_head` the file's first kFileHeadBytes (or all of it when
// shorter) and returns its error, if any, without reading on: a file that is plainly not what the
// caller reads (a 1 GB core, /dev/zero) is refused from its first bytes, not once it was read
// whole or never, as an endless one.
absl::StatusOr<std::string> ReadSmallFile(
    const std::string& path, size_t max_bytes,
    absl::FunctionRef<absl::Status(absl::string_view head)> check_head);

// Maps a whole regular file read-only (private), for caches read in place: only the pages a
// reader touches are faulted in. Errors: the errno code of open/fstat/mmap; kDataLoss when empty.
absl::StatusOr<ScopedMmap> MapFileReadOnly(const std::string& path);

// Reads a file holding one integer, such as /proc/sys/kernel/perf_event_paranoid.
absl::StatusOr<int64_t> ReadIntegerFile(const std::string& path);

// Writes `contents` to `path` so that readers see either the old file or the complete new one:
// writes `path`.tmp.<pid> in the same directory, fsyncs it (unless `durable` is false: caches
// that validate what they read and can rebuild it need not wait for the disk), then renames it
// over `path`. First removes what earlier writers of `path` that died before their rename
// left behind (RemoveStaleTempFiles). A symlink is followed (the file it ends at is replaced;
// the link stays), and a stream (IsStreamPath: /dev/null, a FIFO, a terminal, /dev/stdout) is
// written into directly, never replaced.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 bool durable = true);

// Whether `file_name` (a name in a directory, no slash) is a temporary file WriteFileAtomically
// made for output `output_name` ("OUTPUT.tmp.PID"; any OUTPUT when `output_name` is empty) in a
// process that no longer exists: kill(PID, 0) fails with ESRCH, so it died (SIGKILL, a crash)
// between writing and renaming. This process's own, a live process's, and one kill() may not
// probe (EPERM: another user's) are not stale. A writer in another PID namespace sharing the
// directory is invisible to kill() and looks dead.
bool IsStaleTempFile(absl::string_view file_name, absl::string_view output_name);

// Removes the stale temporary files (IsStaleTempFile) of output `path` from its directory:
// regular files only, never symlinks or directories. Best effort (errors are ignored); returns
// how many were removed.
size_t RemoveStaleTempFiles(const std::string& path);

// Whether `path` names a stream to write into rather than a file to replace: an existing file
// that is not a regular one (/dev/null, a FIFO, a terminal, /dev/stdout when that is a pipe), or
// the regular file this process's stdout or stderr is (/dev/stdout redirected to a file, which
// the profiled command writes too). Magic links (/dev/stdout, /proc/self/fd/N) are followed as
// the kernel follows them. WriteFileAtomically writes into such a path (appends, to that regular
// file) and never replaces it; files named after it, such as its metadata, have no place.
bool IsStreamPath(const std::string& path);

// Checks, before any work is done, that `path` can later be written by WriteFileAtomically:
// its directory exists and accepts new files (one is created and removed), or it is an existing
// special file (a device, a FIFO) that can be opened for writing. Symlinks are followed.
// Errors: kNotFound, kPermissionDenied, kFailedPrecondition (the path is a directory).
absl::Status CheckOutputWritable(const std::string& path);

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_FILE_UTIL_H_
