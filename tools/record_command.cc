#include "base/logging.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "tools/record_options.h"
#include "tools/record_session.h"

namespace nativeprof::tools {

int RunRecordCommand(int argc, char** argv) {
  absl::StatusOr<RecordOptions> options = ParseRecordOptions(argc, argv);
  if (!options.ok()) return PrintCliError(CliStep::kParseOptions, options.status());
  InitLogging(options->verbosity);
  return RunRecording(*options);
}

}  // namespace nativeprof::tools
