// Entry points of the nativeprof subcommands. Each takes the arguments after "nativeprof"
// (argv[0] is the subcommand name), prints results to stdout or files and diagnostics to stderr,
// and returns the process exit code (tools/exit_codes.h).
#ifndef NATIVEPROF_TOOLS_COMMANDS_H_
#define NATIVEPROF_TOOLS_COMMANDS_H_

namespace nativeprof::tools {

int RunRecordCommand(int argc, char** argv);
int RunConvertCommand(int argc, char** argv);
int RunReportCommand(int argc, char** argv);
int RunDiffCommand(int argc, char** argv);
int RunStatCommand(int argc, char** argv);
int RunDemangleCommand(int argc, char** argv);
int RunCargoCommand(int argc, char** argv);

}  // namespace nativeprof::tools

#endif  // NATIVEPROF_TOOLS_COMMANDS_H_
