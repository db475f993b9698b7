#include <cstdio>

#include "base/logging.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"
#include "tools/record_options.h"
#include "tools/record_session.h"

namespace nativeprof::tools {

int RunRecordCommand(int argc, char** argv) {
  absl::StatusOr<RecordOptions> options = ParseRecordOptions(argc, argv);
  if (!options.ok()) {
    if (absl::IsCancelled(options.status())) return kExitOk;  // --help
    std::fprintf(stderr, "nativeprof: %s\n", std::string(options.status().message()).c_str());
    return kExitUsage;
  }
  InitLogging(options->verbosity);
  return RunRecording(*options);
}

}  // namespace nativeprof::tools
