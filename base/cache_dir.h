// nativeprof's per-user cache of derived data that is slow to compute and safe to lose: debug
// files with their DWARF already decompressed (by build-id) and the kernel's symbol table (by
// boot). Like perf's ~/.debug build-id cache, it makes the second profile of a program cheaper
// than the first. Every entry is validated by its reader and rebuilt when missing or damaged, so
// writes skip fsync, and a failure to write only costs speed. Any thread; entries are written
// atomically, so concurrent nativeprof processes can share one cache.
#ifndef NATIVEPROF_BASE_CACHE_DIR_H_
#define NATIVEPROF_BASE_CACHE_DIR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace nativeprof {

class CacheDir {
 public:
  // The cache root: $NATIVEPROF_CACHE_DIR, else $XDG_CACHE_HOME/nativeprof, else
  // $HOME/.cache/nativeprof. nullopt (no caching) when NATIVEPROF_CACHE_DIR is "off" or "0", or
  // when no variable gives a directory. Nothing is created until the first Put.
  static std::optional<CacheDir> FromEnvironment();

  explicit CacheDir(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  // Where entry `name` of `bucket` (a subdirectory: "debug", "kernel") lives, present or not.
  std::string PathOf(absl::string_view bucket, absl::string_view name) const;

  // Stores `contents` as entry `name` of `bucket`, creating directories as needed; then removes
  // the bucket's stale temporary files (IsStaleTempFile: of processes killed while writing an
  // entry) and, when the bucket holds more than `max_bucket_bytes`, its least recently used
  // entries (by mtime, which Touch refreshes) until it fits. Errors: the errno code of
  // mkdir/write/rename.
  absl::Status Put(absl::string_view bucket, absl::string_view name, absl::string_view contents,
                   uint64_t max_bucket_bytes) const;
  // Marks an entry as used now, so that trimming keeps it over older ones. Best effort.
  static void Touch(const std::string& path);

 private:
  void Trim(const std::string& bucket_dir, uint64_t max_bytes) const;

  std::string root_;
};

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_CACHE_DIR_H_
