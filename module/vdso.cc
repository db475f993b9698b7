#include "module/vdso.h"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"
#include "base/file_util.h"
#include "base/scoped_fd.h"

namespace nativeprof::module {

absl::StatusOr<std::string> ReadProcessVdso(int32_t pid, uint64_t start_avma, uint64_t end_avma) {
  if (pid <= 0 || end_avma <= start_avma || end_avma - start_avma > kMaxVdsoBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("no plausible vdso range for pid ", pid, ": ", start_avma, "-", end_avma));
  }
  const std::string mem = absl::StrCat("/proc/", pid, "/mem");
  ScopedFd fd(::open(mem.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(absl::StrCat("open ", mem));
  std::string image(end_avma - start_avma, '\0');
  const ssize_t n = ::pread(fd.get(), image.data(), image.size(), static_cast<off_t>(start_avma));
  if (n < 0) return ErrnoError(absl::StrCat("read the vdso from ", mem));
  if (static_cast<size_t>(n) != image.size()) {
    return absl::DataLossError(absl::StrCat("short read of the vdso from ", mem));
  }
  return image;
}

absl::StatusOr<std::string> ReadOwnVdso() {
  auto maps = ReadSmallFile("/proc/self/maps");
  if (maps.ok()) {
    for (absl::string_view line : absl::StrSplit(*maps, '\n')) {
      if (!absl::EndsWith(line, "[vdso]")) continue;
      std::vector<absl::string_view> range = absl::StrSplit(line.substr(0, line.find(' ')), '-');
      uint64_t s = 0, e = 0;
      if (range.size() != 2 || !absl::SimpleHexAtoi(range[0], &s) ||
          !absl::SimpleHexAtoi(range[1], &e) || e <= s || e - s > kMaxVdsoBytes) {
        break;
      }
      // Our own mapping, listed by the kernel just now: readable in place.
      return std::string(reinterpret_cast<const char*>(s), e - s);
    }
  }
  return absl::NotFoundError("no vdso image");
}

absl::StatusOr<std::string> ReadVdsoImage(int32_t pid, uint64_t start_avma, uint64_t end_avma) {
  auto image = ReadProcessVdso(pid, start_avma, end_avma);
  if (image.ok()) return image;
  // Same kernel, same image.
  return ReadOwnVdso();
}

}  // namespace nativeprof::module
