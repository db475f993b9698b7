#include "tools/output_fallback.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "tools/cli_error.h"

namespace nativeprof::tools {

const std::string& OutputFallback::Directory(bool next) {
  if (!listed_) {
    listed_ = true;
    // $TMPDIR, else /tmp, else here: a $TMPDIR that cannot take it (full, read-only) is no
    // reason to lose the profile while /tmp could.
    parents_ = {".", "/tmp"};
    std::string tmpdir = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "";
    while (tmpdir.size() > 1 && tmpdir.back() == '/') tmpdir.pop_back();  // no "//" in messages
    // "/tmp/" and "/tmp/." are /tmp, which is tried next anyway.
    if (!tmpdir.empty() && CanonicalFileName(tmpdir) != CanonicalFileName("/tmp")) {
      parents_.push_back(tmpdir);
    }
  }
  if (!next && !directory_.empty()) return directory_;
  directory_.clear();
  while (directory_.empty() && !parents_.empty()) {
    std::string pattern = absl::StrCat(parents_.back(), "/nativeprof-output-XXXXXX");
    parents_.pop_back();
    if (::mkdtemp(pattern.data()) != nullptr) directory_ = std::move(pattern);
  }
  return directory_;
}

std::string OutputFallback::FreeName(const std::string& dir, const std::string& base) const {
  // Two outputs asked for in different directories under one name (-o a/x.folded, --svg
  // b/x.folded) must not overwrite each other in the one fallback directory.
  std::string name = absl::StrCat(dir, "/", base);
  for (int n = 2;; ++n) {
    bool taken = false;
    for (const auto& [asked, written] : moved_) taken = taken || written == name;
    if (!taken) return name;
    name = absl::StrCat(dir, "/", n, "-", base);
  }
}

std::string OutputFallback::Write(const std::string& path,
                                  absl::FunctionRef<absl::Status(const std::string&)> write,
                                  int* exit_code) {
  const absl::Status st = write(path);
  if (st.ok()) return path;
  std::string written;
  absl::Status fallback_status = absl::OkStatus();
  std::string tried;  // the last fallback directory that failed
  const std::string base(BaseNameOf(path));
  for (bool next = false; written.empty(); next = true) {
    const std::string& dir = Directory(next);
    if (dir.empty()) break;
    const std::string fallback = FreeName(dir, base.empty() ? "output" : base);
    fallback_status = write(fallback);
    if (fallback_status.ok()) {
      written = fallback;
    } else {
      ::rmdir(dir.c_str());  // only if nothing else went there
      tried = dir;
    }
  }
  // A message that names the file already says what failed ("cannot write X: No space left on
  // device"): prefixing it again doubled the line.
  const std::string what =
      absl::StrContains(st.message(), path) ? "" : absl::StrCat("cannot write ", path);
  *exit_code = PrintCliError(
      CliStep::kWriteOutput, st, what,
      !written.empty() ? absl::StrCat("wrote it to ", written, " instead")
      : tried.empty()
          ? std::string("and no directory for it could be made in $TMPDIR, /tmp or here")
          : absl::StrCat("and not to ", tried, " either: ", fallback_status.message()));
  if (!written.empty()) {
    moved_.emplace_back(path, written);
  } else {
    lost_.push_back(path);
  }
  return written;
}

std::string OutputFallback::Describe(const std::string& path) const {
  for (const std::string& lost : lost_) {
    if (lost == path) return absl::StrCat(path, " (not written)");
  }
  return WrittenPath(path);
}

const std::string& OutputFallback::WrittenPath(const std::string& path) const {
  for (const auto& [asked, written] : moved_) {
    if (asked == path) return written;
  }
  return path;
}

}  // namespace nativeprof::tools
