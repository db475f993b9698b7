#include "tools/output_fallback.h"

#include <stdlib.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "tools/cli_error.h"

namespace nativeprof::tools {

const std::string& OutputFallback::Directory() {
  if (tried_) return directory_;
  tried_ = true;
  const char* tmpdir = std::getenv("TMPDIR");
  for (std::string parent : {std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp"),
                             std::string(".")}) {
    std::string pattern = absl::StrCat(parent, "/nativeprof-output-XXXXXX");
    if (::mkdtemp(pattern.data()) != nullptr) {
      directory_ = std::move(pattern);
      break;
    }
  }
  return directory_;
}

std::string OutputFallback::Write(const std::string& path,
                                  absl::FunctionRef<absl::Status(const std::string&)> write,
                                  int* exit_code) {
  const absl::Status st = write(path);
  if (st.ok()) return path;
  std::string written;
  absl::Status fallback_status = absl::OkStatus();
  if (const std::string& dir = Directory(); !dir.empty()) {
    const std::string base(BaseNameOf(path));
    const std::string fallback = absl::StrCat(dir, "/", base.empty() ? "output" : base);
    fallback_status = write(fallback);
    if (fallback_status.ok()) written = fallback;
  }
  *exit_code = PrintCliError(
      CliStep::kWriteOutput, st, absl::StrCat("cannot write ", path),
      !written.empty() ? absl::StrCat("wrote it to ", written, " instead")
      : directory_.empty()
          ? std::string("and no directory for it could be made in $TMPDIR, /tmp or here")
          : absl::StrCat("and not to ", directory_, " either: ", fallback_status.message()));
  if (!written.empty()) moved_.emplace_back(path, written);
  return written;
}

const std::string& OutputFallback::WrittenPath(const std::string& path) const {
  for (const auto& [asked, written] : moved_) {
    if (asked == path) return written;
  }
  return path;
}

}  // namespace nativeprof::tools
