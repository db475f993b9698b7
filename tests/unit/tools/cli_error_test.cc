#include "tools/cli_error.h"

#include "absl/status/status.h"
#include "base/errno_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/exit_codes.h"

namespace nativeprof::tools {
namespace {

int Code(CliStep step, const absl::Status& status) { return ToCliError(step, status).exit_code; }

TEST(CliErrorTest, OptionsHelpExitsZeroSilentlyAndEverythingElseIsUsage) {
  const CliError help = ToCliError(CliStep::kParseOptions, absl::CancelledError("help"));
  EXPECT_EQ(help.exit_code, kExitOk);
  EXPECT_EQ(help.message, "");
  const CliError bad = ToCliError(CliStep::kParseOptions, absl::InvalidArgumentError("-F 'x'"));
  EXPECT_EQ(bad.exit_code, kExitUsage);
  EXPECT_EQ(bad.message, "-F 'x'");
  EXPECT_EQ(Code(CliStep::kParseOptions, absl::NotFoundError("unknown event")), kExitUsage);
}

// docs/record.md's table: 2 bad command line, 3 perf_event_open refused or unsupported, 1 runtime.
TEST(CliErrorTest, OpeningEventsFollowsTheRecordTable) {
  EXPECT_EQ(Code(CliStep::kOpenEvents, absl::PermissionDeniedError("paranoid")),
            kExitPerfUnavailable);
  EXPECT_EQ(Code(CliStep::kOpenEvents, absl::NotFoundError("event not supported")),
            kExitPerfUnavailable);
  EXPECT_EQ(Code(CliStep::kOpenEvents, absl::ResourceExhaustedError("mlock")),
            kExitPerfUnavailable);
  EXPECT_EQ(Code(CliStep::kOpenEvents, absl::UnimplementedError("ENOSYS")), kExitPerfUnavailable);
  EXPECT_EQ(Code(CliStep::kOpenEvents, absl::InvalidArgumentError("-F too high")), kExitUsage);
  EXPECT_EQ(Code(CliStep::kOpenEvents, absl::UnavailableError("exited")), kExitFailure);
}

// docs/stat.md: "-p of a missing process: exit 1"; a refusal is still 3.
TEST(CliErrorTest, OpeningCountersTreatsNotFoundAsAMissingProcess) {
  EXPECT_EQ(Code(CliStep::kOpenCounters, absl::NotFoundError("no process with pid 9")),
            kExitFailure);
  EXPECT_EQ(Code(CliStep::kOpenCounters, absl::UnavailableError("exited")), kExitFailure);
  EXPECT_EQ(Code(CliStep::kOpenCounters, absl::PermissionDeniedError("ptrace")),
            kExitPerfUnavailable);
}

TEST(CliErrorTest, ExecFailureIs127WhenMissingElse126) {
  EXPECT_EQ(Code(CliStep::kExecCommand, ErrnoError(ENOENT, "cannot execute 'x'")), kExitNotFound);
  EXPECT_EQ(Code(CliStep::kExecCommand, ErrnoError(EACCES, "cannot execute 'x'")),
            kExitNotExecutable);
  EXPECT_EQ(Code(CliStep::kExecCommand, ErrnoError(ENOEXEC, "cannot execute 'x'")),
            kExitNotExecutable);
}

TEST(CliErrorTest, StepsWithOneCodeIgnoreTheStatusCode) {
  for (const absl::Status& st : {absl::NotFoundError("a"), absl::PermissionDeniedError("b"),
                                 absl::InvalidArgumentError("c"), absl::InternalError("d")}) {
    EXPECT_EQ(Code(CliStep::kRun, st), kExitFailure);
    EXPECT_EQ(Code(CliStep::kReadInput, st), kExitBadInput);
    EXPECT_EQ(Code(CliStep::kWriteOutput, st), kExitOutput);
    EXPECT_EQ(Code(CliStep::kBuild, st), kExitBuildFailed);
  }
}

TEST(CliErrorTest, MessageIsWhatThenStatusThenFixOnOneLine) {
  const absl::Status st = ErrnoError(ENOENT, "output directory /nope");
  EXPECT_EQ(ToCliError(CliStep::kWriteOutput, st, "cannot write '/nope/x.json'",
                       "choose another --json path")
                .message,
            "cannot write '/nope/x.json': output directory /nope: No such file or directory; "
            "choose another --json path");
  EXPECT_EQ(ToCliError(CliStep::kWriteOutput, st).message,
            "output directory /nope: No such file or directory");
}

// The errno text is in an ErrnoError message once, where it is made, so no caller has to strip a
// second copy (stat once did).
TEST(CliErrorTest, ErrnoErrorCarriesTheErrnoTextOnce) {
  const absl::Status st = ErrnoError(ENOENT, "cannot execute 'x'");
  EXPECT_EQ(st.message(), "cannot execute 'x': No such file or directory");
  EXPECT_EQ(ToCliError(CliStep::kExecCommand, st).message, st.message());
}

}  // namespace
}  // namespace nativeprof::tools
