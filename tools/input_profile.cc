#include "tools/input_profile.h"

#include <cstdio>

#include "output/folded_reader.h"

namespace nativeprof::tools {

std::optional<symbolize::Profile> ReadInputProfile(const std::string& path, absl::string_view fix) {
  absl::StatusOr<symbolize::Profile> profile = output::ReadFoldedFile(path);
  if (!profile.ok()) {
    const absl::string_view problem = profile.status().message();
    std::fprintf(stderr, "nativeprof: %.*s; %.*s\n", static_cast<int>(problem.size()),
                 problem.data(), static_cast<int>(fix.size()), fix.data());
    return std::nullopt;
  }
  return *std::move(profile);
}

}  // namespace nativeprof::tools
