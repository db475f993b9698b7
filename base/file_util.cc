#include "base/file_util.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "base/errno_status.h"
#include "base/scoped_fd.h"

namespace nativeprof {
namespace {

// WriteFileAtomically's temporary names are "<path>.tmp.<pid>"; IsStaleTempFile parses them.
constexpr absl::string_view kTempInfix = ".tmp.";

absl::Status TooLarge(const std::string& path, size_t max_bytes) {
  return absl::ResourceExhaustedError(
      absl::StrCat(path, " is larger than the ", max_bytes, "-byte limit for reading it whole"));
}

}  // namespace

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string ReadLinkOrEmpty(const std::string& path) {
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

absl::string_view BaseNameOf(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

std::string CanonicalFileName(const std::string& path) {
  std::error_code ec;
  std::filesystem::path named = std::filesystem::weakly_canonical(path, ec);
  if (ec) named = std::filesystem::absolute(path, ec).lexically_normal();
  return ec ? path : named.string();
}

std::optional<RegularFileId> RegularFileIdOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return RegularFileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

bool SameRegularFile(const std::string& a, const std::string& b) {
  const std::optional<RegularFileId> ia = RegularFileIdOf(a);
  return ia.has_value() && ia == RegularFileIdOf(b);
}

absl::Status CheckNotOverwritingNonProfile(const std::string& path) {
  if (!RegularFileIdOf(path).has_value() || IsStreamPath(path)) return absl::OkStatus();
  // O_NONBLOCK: the path may have become a FIFO since it was stat()ed.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return absl::OkStatus();  // writing it will say what is wrong
  // The ELF header as far as e_type, which tells a program from an object file or a core dump.
  unsigned char head[offsetof(Elf64_Ehdr, e_type) + sizeof(Elf64_Half)];
  ssize_t n;
  do {
    n = ::pread(fd.get(), head, sizeof(head), 0);
  } while (n < 0 && errno == EINTR);
  const char* what = nullptr;
  if (n >= SELFMAG && std::memcmp(head, ELFMAG, SELFMAG) == 0) {
    what = "an ELF file";
    if (n == static_cast<ssize_t>(sizeof(head))) {
      const unsigned char* t = head + offsetof(Elf64_Ehdr, e_type);  // same offset in ELF32
      const unsigned type = head[EI_DATA] == ELFDATA2MSB ? t[0] << 8 | t[1] : t[1] << 8 | t[0];
      switch (type) {
        case ET_REL: what = "an ELF object file"; break;
        case ET_EXEC: what = "an ELF executable"; break;
        case ET_DYN: what = "an ELF executable or library"; break;  // PIE or shared object
        case ET_CORE: what = "an ELF core dump"; break;
        default: break;
      }
    }
  } else if (n >= 2 && head[0] == '#' && head[1] == '!') {
    what = "a script (#!)";
  }
  if (what == nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(path, " is ", what, ", not a profile"));
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  return ReadSmallFile(path, max_bytes, [](absl::string_view) { return absl::OkStatus(); });
}

absl::StatusOr<std::string> ReadSmallFile(
    const std::string& path, size_t max_bytes,
    absl::FunctionRef<absl::Status(absl::string_view head)> check_head) {
  // O_NONBLOCK only for open(): on a FIFO that nobody writes (a perf map in /tmp can be one) open
  // would block forever; reads block as usual once it is cleared.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return ErrnoError(absl::StrCat("open ", path));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return ErrnoError(absl::StrCat("fcntl ", path));
  }
  // Regular files are read straight into a buffer of their size; /proc files report size 0 and
  // are read in chunks until EOF.
  struct stat st;
  size_t chunk = 8192;
  bool regular = false;
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    if (static_cast<uint64_t>(st.st_size) > max_bytes) return TooLarge(path, max_bytes);
    chunk = static_cast<size_t>(st.st_size) + 1;  // +1 sees EOF without another grow
    regular = true;
  }
  std::string out;
  size_t used = 0;
  bool head_checked = false;
  while (true) {
    // One byte beyond the limit tells a file of exactly max_bytes from a longer one.
    size_t want = std::min(chunk, max_bytes + 1 - used);
    if (!head_checked) want = std::min(want, kFileHeadBytes - used);
    out.resize(used + want);
    ssize_t n = ::read(fd.get(), out.data() + used, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(absl::StrCat("read ", path));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    if (used > max_bytes) return TooLarge(path, max_bytes);
    if (!head_checked && used >= kFileHeadBytes) {
      head_checked = true;
      NP_RETURN_IF_ERROR(check_head(absl::string_view(out.data(), used)));
    }
    if (!regular && chunk < (size_t{1} << 20)) chunk *= 2;
  }
  out.resize(used);
  if (!head_checked) NP_RETURN_IF_ERROR(check_head(out));
  return out;
}

absl::StatusOr<ScopedMmap> MapFileReadOnly(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(absl::StrCat("open ", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(absl::StrCat("fstat ", path));
  if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
    return absl::DataLossError(absl::StrCat(path, " is empty or not a regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return ErrnoError(absl::StrCat("mmap ", path));
  return ScopedMmap(addr, size);
}

absl::StatusOr<int64_t> ReadIntegerFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return absl::DataLossError(absl::StrCat(path, " does not hold an integer"));
  }
  return value;
}

bool IsStaleTempFile(absl::string_view file_name, absl::string_view output_name) {
  const size_t infix = file_name.rfind(kTempInfix);
  if (infix == absl::string_view::npos || infix == 0) return false;
  if (!output_name.empty() && file_name.substr(0, infix) != output_name) return false;
  // Exactly the decimal form getpid() is written in: digits, no sign, no leading zero.
  const absl::string_view digits = file_name.substr(infix + kTempInfix.size());
  pid_t pid = 0;
  if (digits.empty() || digits[0] == '0' ||
      digits.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(digits, &pid) || pid <= 0 || pid == ::getpid()) {
    return false;
  }
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

size_t RemoveStaleTempFiles(const std::string& path) {
  const absl::string_view name = BaseNameOf(path);
  if (name.empty()) return 0;  // a directory path names no output
  DIR* dir = ::opendir(DirectoryOf(path).c_str());
  if (dir == nullptr) return 0;
  size_t removed = 0;
  const int dir_fd = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    const absl::string_view file_name(entry->d_name);
    // Cheap name test first: a directory of many files costs one readdir pass and no syscalls.
    if (!absl::StartsWith(file_name, name) || !IsStaleTempFile(file_name, name)) continue;
    struct stat st;
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (::unlinkat(dir_fd, entry->d_name, 0) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

namespace {

// Where writing `path` lands: the file its symlinks end at (so the link stays a link), whether
// or not that file exists yet. A loop, or a chain longer than the kernel's 40, stays as given.
std::string FollowSymlinks(const std::string& path) {
  std::string at = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
    const std::string link = ReadLinkOrEmpty(at);
    if (link.empty()) return at;
    at = link.front() == '/' ? link : absl::StrCat(DirectoryOf(at), "/", link);
  }
  return path;
}

// What IsStreamPath says of a file `st` describes.
bool IsStream(const struct stat& st) {
  // Not a regular file (/dev/null, a FIFO, a terminal): written into, as perf does, since
  // renaming over it would replace the device.
  if (!S_ISREG(st.st_mode)) return !S_ISDIR(st.st_mode);
  // The file stdout or stderr was redirected to: replacing it would take it from the command
  // writing there too, whose output would be lost.
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat open_st;
    if (::fstat(fd, &open_st) == 0 && open_st.st_dev == st.st_dev &&
        open_st.st_ino == st.st_ino) {
      return true;
    }
  }
  return false;
}

absl::Status WriteAll(int fd, absl::string_view contents, const std::string& name) {
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(absl::StrCat("cannot write ", name));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

bool IsStreamPath(const std::string& path) {
  // stat, not FollowSymlinks: a magic link such as /proc/self/fd/1 reads as "pipe:[N]".
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && IsStream(st);
}

absl::Status WriteFileAtomically(const std::string& given_path, absl::string_view contents,
                                 bool durable) {
  if (struct stat st; ::stat(given_path.c_str(), &st) == 0 && IsStream(st)) {
    ScopedFd fd(::open(given_path.c_str(),
                       O_WRONLY | O_CLOEXEC | (S_ISREG(st.st_mode) ? O_APPEND : 0)));
    if (!fd.valid()) return ErrnoError(absl::StrCat("cannot open ", given_path));
    return WriteAll(fd.get(), contents, given_path);
  }
  const std::string path = FollowSymlinks(given_path);
  RemoveStaleTempFiles(path);
  std::string tmp = absl::StrCat(path, kTempInfix, ::getpid());
  {
    ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    // Each error names the file asked for: the temporary one is gone once this returns.
    if (!fd.valid()) return ErrnoError(absl::StrCat("cannot write ", given_path));
    if (absl::Status st = WriteAll(fd.get(), contents, given_path); !st.ok()) {
      ::unlink(tmp.c_str());
      return st;
    }
    if (durable && ::fsync(fd.get()) != 0 && errno != EINVAL) {
      absl::Status st = ErrnoError(absl::StrCat("cannot write ", given_path, " to disk (fsync)"));
      ::unlink(tmp.c_str());
      return st;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status st =
        ErrnoError(absl::StrCat("cannot write ", given_path, " (renaming its temporary file)"));
    ::unlink(tmp.c_str());
    return st;
  }
  return absl::OkStatus();
}

absl::Status CheckOutputWritable(const std::string& given_path) {
  if (given_path.empty()) return absl::InvalidArgumentError("output path is empty");
  struct stat st;
  if (::stat(given_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("output path ", given_path, " is a directory"));
  }
  if (IsStreamPath(given_path)) {
    if (::access(given_path.c_str(), W_OK) != 0) {
      return ErrnoError(absl::StrCat("output ", given_path, " is not writable"));
    }
    return absl::OkStatus();
  }
  const std::string path = FollowSymlinks(given_path);
  std::string dir = DirectoryOf(path);
  if (::stat(dir.c_str(), &st) != 0) {
    return ErrnoError(absl::StrCat("output directory ", dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return ErrnoError(absl::StrCat("output directory ", dir, " is not writable"));
  }
  // access() answers from the mode bits, which root passes: /proc and /sys accept no new file
  // whatever they say. Creating the temporary file WriteFileAtomically will create is the test.
  const std::string probe = absl::StrCat(path, kTempInfix, ::getpid());
  ScopedFd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    if (errno == EEXIST) return absl::OkStatus();  // a stale one, which the writer truncates
    return ErrnoError(absl::StrCat("output directory ", dir, " does not accept new files"));
  }
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace nativeprof
