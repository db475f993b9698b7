#include "base/cache_dir.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/file_util.h"

namespace nativeprof {
namespace {

const char* NonEmptyEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

// mkdir -p; directories it creates are private to the user (cached kernel addresses defeat
// KASLR for whoever can read them). Existing directories are left as they are.
absl::Status MakeDirectories(const std::string& dir) {
  for (size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash + 1);
    const std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoError(absl::StrCat("cannot create cache directory ", prefix));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<CacheDir> CacheDir::FromEnvironment() {
  if (const char* dir = std::getenv("NATIVEPROF_CACHE_DIR"); dir != nullptr) {
    absl::string_view v(dir);
    if (v.empty() || v == "off" || v == "0") return std::nullopt;
    return CacheDir(std::string(v));
  }
  if (const char* xdg = NonEmptyEnv("XDG_CACHE_HOME"); xdg != nullptr) {
    return CacheDir(absl::StrCat(xdg, "/nativeprof"));
  }
  if (const char* home = NonEmptyEnv("HOME"); home != nullptr) {
    return CacheDir(absl::StrCat(home, "/.cache/nativeprof"));
  }
  return std::nullopt;
}

std::string CacheDir::PathOf(absl::string_view bucket, absl::string_view name) const {
  return absl::StrCat(root_, "/", bucket, "/", name);
}

absl::Status CacheDir::Put(absl::string_view bucket, absl::string_view name,
                           absl::string_view contents, uint64_t max_bucket_bytes) const {
  const std::string dir = absl::StrCat(root_, "/", bucket);
  if (absl::Status st = MakeDirectories(dir); !st.ok()) return st;
  if (absl::Status st = WriteFileAtomically(PathOf(bucket, name), contents, /*durable=*/false);
      !st.ok()) {
    return st;
  }
  Trim(dir, max_bucket_bytes);
  return absl::OkStatus();
}

void CacheDir::Touch(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

void CacheDir::Trim(const std::string& bucket_dir, uint64_t max_bytes) const {
  struct Entry {
    std::filesystem::file_time_type used;
    uint64_t bytes;
    std::filesystem::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(bucket_dir, ec)) {
    std::error_code e1, e2;
    if (!e.is_regular_file(e1)) continue;
    const std::string file_name = e.path().filename().string();
    if (absl::StrContains(file_name, ".tmp.")) {
      // Another process's entry in the making is not ours to remove, but what a process killed
      // while writing left (under any entry's name: Put only cleans its own) is.
      if (IsStaleTempFile(file_name, "")) std::filesystem::remove(e.path(), e2);
      continue;
    }
    Entry entry{e.last_write_time(e1), e.file_size(e2), e.path()};
    if (e1 || e2) continue;
    total += entry.bytes;
    entries.push_back(std::move(entry));
  }
  if (total <= max_bytes) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  // The newest entry (just written) is never removed, even when it alone exceeds the limit.
  for (size_t i = 0; i + 1 < entries.size() && total > max_bytes; ++i) {
    std::error_code rm;
    if (std::filesystem::remove(entries[i].path, rm)) total -= entries[i].bytes;
  }
}

}  // namespace nativeprof
