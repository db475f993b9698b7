#include "module/module_opener.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/errno_status.h"
#include "module/module_path.h"

namespace nativeprof::module {
namespace {

std::string MapFilesPath(int32_t pid, uint64_t start_avma, uint64_t end_avma) {
  return absl::StrFormat("/proc/%d/map_files/%x-%x", pid, start_avma, end_avma);
}

}  // namespace

std::vector<std::string> CandidatePaths(const ModuleRequest& request) {
  const sampler::ModuleInfo& info = *request.info;
  const std::string path = PathOnDisk(info.path);
  std::vector<std::string> candidates;
  if (request.pid > 0 && request.end_avma > request.start_avma) {
    candidates.push_back(MapFilesPath(request.pid, request.start_avma, request.end_avma));
  }
  // A memfd's name is no path: only the mapping reaches it.
  if (KindOfPath(info.path) == PathKind::kMemfd) return candidates;
  if (info.first_pid > 0) {
    candidates.push_back(absl::StrCat("/proc/", info.first_pid, "/root", path));
  }
  candidates.push_back(path);
  return candidates;
}

FileIdentity IdentityOf(const ElfImage& image) {
  return FileIdentity{image.dev(), image.inode(), image.build_id()};
}

absl::Status CheckIdentity(const sampler::ModuleInfo& mapped, const FileIdentity& file) {
  if (!mapped.build_id.empty()) {
    // The kernel read the build-id from the mapped file (MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID
    // sends it instead of the inode): a file without it, or with another, is a different build.
    if (file.build_id.has_value() && *file.build_id != mapped.build_id) {
      return absl::FailedPreconditionError(
          absl::StrCat("build-id ", mapped.build_id, " was mapped, the file has ",
                       file.build_id->empty() ? "none" : *file.build_id));
    }
    return absl::OkStatus();
  }
  // A file from memory (dev = inode = 0) has no inode to compare; only files are checked.
  if (mapped.inode != 0 && file.inode != 0 &&
      (file.inode != mapped.inode || (mapped.dev != 0 && file.dev != mapped.dev))) {
    return absl::FailedPreconditionError("its inode changed");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ElfImage>> OpenModuleImage(const ModuleRequest& request) {
  const sampler::ModuleInfo& info = *request.info;
  if (info.is_kernel || !HasFile(KindOfPath(info.path))) {
    return absl::InvalidArgumentError(absl::StrCat(info.path, " has no file"));
  }
  const std::string path = PathOnDisk(info.path);
  absl::Status last = absl::NotFoundError(absl::StrCat("cannot open ", path));
  absl::Status mismatch;  // set when some candidate opened but was another file
  auto try_fd = [&](ScopedFd fd) -> std::unique_ptr<ElfImage> {
    absl::StatusOr<std::unique_ptr<ElfImage>> image = ElfImage::FromFd(std::move(fd), path);
    if (!image.ok()) {
      last = image.status();
      return nullptr;
    }
    if (absl::Status same = CheckIdentity(info, IdentityOf(**image)); !same.ok()) {
      if (mismatch.ok()) mismatch = same;
      return nullptr;
    }
    return *std::move(image);
  };
  if (request.held_fd >= 0) {
    ScopedFd fd(::fcntl(request.held_fd, F_DUPFD_CLOEXEC, 0));
    if (fd.valid()) {
      // The held fd's file offset is shared with the dup; libelf reads with pread/mmap only.
      if (auto image = try_fd(std::move(fd))) return image;
    }
  }
  for (const std::string& candidate : CandidatePaths(request)) {
    ScopedFd fd(::open(candidate.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      last = ErrnoError(absl::StrCat("open ", candidate));
      continue;
    }
    if (auto image = try_fd(std::move(fd))) return image;
  }
  if (!mismatch.ok()) return mismatch;
  return last;
}

ScopedFd HoldModuleFd(const sampler::ModuleInfo& info, int32_t pid, uint64_t start_avma,
                      uint64_t end_avma) {
  const PathKind kind = KindOfPath(info.path);
  if (info.is_kernel || !HasFile(kind)) return ScopedFd();
  // map_files names exactly the mapped inode, even if the path was deleted or replaced since.
  ScopedFd fd(::open(MapFilesPath(pid, start_avma, end_avma).c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.valid() || kind == PathKind::kMemfd) return fd;
  fd.Reset(::open(PathOnDisk(info.path).c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return ScopedFd();
  FileIdentity identity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        std::nullopt};
  if (!CheckIdentity(info, identity).ok()) return ScopedFd();  // another file lives there now
  return fd;
}

}  // namespace nativeprof::module
