#include "tools/input_profile.h"

#include "output/folded_reader.h"
#include "tools/cli_error.h"

namespace nativeprof::tools {

std::optional<symbolize::Profile> ReadInputProfile(const std::string& path, absl::string_view fix) {
  absl::StatusOr<symbolize::Profile> profile = output::ReadFoldedFile(path);
  if (!profile.ok()) {
    PrintCliError(CliStep::kReadInput, profile.status(), {}, fix);
    return std::nullopt;
  }
  return *std::move(profile);
}

}  // namespace nativeprof::tools
