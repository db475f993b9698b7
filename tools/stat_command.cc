// `nativeprof stat`: runs a command (or attaches to a process) with counting perf events and
// prints perf-stat-like totals, derived metrics and hints on stderr, optionally as JSON too.
// Runs on the main thread; installs no signal handlers (SIGINT/SIGTERM are read through a
// signalfd and forwarded).
#include <getopt.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/group_signal_witness.h"
#include "base/logging.h"
#include "base/signal_reader.h"
#include "output/counter_report.h"
#include "output/json_util.h"
#include "sampler/child_process.h"
#include "sampler/counter_attach.h"
#include "sampler/counter_set.h"
#include "sampler/event_spec.h"
#include "sampler/record_loop.h"
#include "sampler/target.h"
#include "tools/cli_error.h"
#include "tools/output_fallback.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"

namespace nativeprof::tools {
namespace {

constexpr char kUsage[] =
    "usage: nativeprof stat [options] -- CMD [ARGS...]\n"
    "       nativeprof stat [options] -p PID\n"
    "\n"
    "Counts events while CMD runs (threads and child processes included) and prints totals,\n"
    "derived metrics (CPUs utilized, IPC, miss rates, rates per second) and hints on stderr.\n"
    "Exits with CMD's own status (128+N when it died on signal N).\n"
    "\n"
    "options:\n"
    "  -e, --event LIST   comma-separated events (default: task-clock, context-switches,\n"
    "                     cpu-migrations, page-faults, cycles, instructions, branches,\n"
    "                     branch-misses, cache-references, cache-misses); also major-faults,\n"
    "                     minor-faults, L1-dcache-load-misses, LLC-load-misses,\n"
    "                     stalled-cycles-frontend, stalled-cycles-backend, raw:0xNNNN, ...\n"
    "  -r, --repeat N     run CMD N times; show mean +- relative standard deviation\n"
    "      --per-thread   break counts down per thread and child process (tid, comm)\n"
    "      --json FILE    also write the numbers as JSON to FILE (atomically)\n"
    "  -p, --pid PID      count an existing process (all its threads) until it exits or SIGINT\n"
    "  -v, --verbose      more diagnostics (repeat for more)\n"
    "  -h, --help         this text\n";

struct StatOptions {
  std::vector<sampler::EventSpec> events;
  int repeat = 1;
  bool per_thread = false;
  std::string json_path;
  pid_t attach_pid = -1;
  std::vector<std::string> command;
};

double MonotonicSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double TimevalSeconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

// What the kernel names the main thread after exec: the file's basename, 15 bytes at most.
std::string CommOf(const std::string& program) {
  return std::string(BaseNameOf(program).substr(0, 15));
}

int UsageError(const std::string& problem, const std::string& what_to_do) {
  std::fprintf(stderr, "nativeprof: %s; %s\n", problem.c_str(), what_to_do.c_str());
  return kExitUsage;
}

// Parses argv into `options`; returns an exit code to stop with, or nullopt to go on.
std::optional<int> ParseOptions(int argc, char** argv, StatOptions* options) {
  enum { kPerThread = 1000, kJson };
  static const option kLongOptions[] = {
      {"event", required_argument, nullptr, 'e'},
      {"repeat", required_argument, nullptr, 'r'},
      {"per-thread", no_argument, nullptr, kPerThread},
      {"json", required_argument, nullptr, kJson},
      {"pid", required_argument, nullptr, 'p'},
      {"verbose", no_argument, nullptr, 'v'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  optind = 0;
  opterr = 0;
  int verbosity = 0;
  std::string event_list;
  bool have_events = false;
  while (true) {
    int c = getopt_long(argc, argv, "+e:r:p:vh", kLongOptions, nullptr);
    if (c == -1) break;
    switch (c) {
      case 'e':
        if (have_events) absl::StrAppend(&event_list, ",");
        absl::StrAppend(&event_list, optarg);
        have_events = true;
        break;
      case 'r': {
        int n = 0;
        if (!absl::SimpleAtoi(optarg, &n) || n < 1) {
          return UsageError(absl::StrCat("invalid repeat count '", optarg, "'"),
                            "-r takes a positive number of runs");
        }
        options->repeat = n;
        break;
      }
      case 'p': {
        int pid = 0;
        if (!absl::SimpleAtoi(optarg, &pid) || pid <= 0) {
          return UsageError(absl::StrCat("invalid pid '", optarg, "'"),
                            "-p takes a process id");
        }
        options->attach_pid = pid;
        break;
      }
      case kPerThread:
        options->per_thread = true;
        break;
      case kJson:
        options->json_path = optarg;
        break;
      case 'v':
        ++verbosity;
        break;
      case 'h':
        std::fputs(kUsage, stdout);
        return kExitOk;
      default: {
        std::string opt = optopt != 0 ? std::string("-") + static_cast<char>(optopt)
                                      : std::string(argv[optind - 1]);
        std::fprintf(stderr, "nativeprof: bad option '%s'; see 'nativeprof stat --help'\n%s",
                     opt.c_str(), kUsage);
        return kExitUsage;
      }
    }
  }
  InitLogging(verbosity);
  for (int i = optind; i < argc; ++i) options->command.push_back(argv[i]);
  if (options->command.empty() && options->attach_pid < 0) {
    std::fprintf(stderr, "nativeprof: no command given; put it after '--'\n%s", kUsage);
    return kExitUsage;
  }
  if (!options->command.empty() && options->attach_pid > 0) {
    return UsageError("both -p and a command given", "use one of them");
  }
  if (options->per_thread && options->repeat > 1) {
    return UsageError("--per-thread cannot be combined with -r",
                      "thread ids differ between runs; measure one run per thread breakdown");
  }
  if (options->attach_pid > 0 && options->repeat > 1) {
    return UsageError("-r cannot be combined with -p", "a running process can be counted once");
  }
  if (have_events) {
    absl::StatusOr<std::vector<sampler::EventSpec>> events =
        sampler::ParseEventList(event_list);
    if (!events.ok()) {
      return PrintCliError(CliStep::kParseOptions, events.status());
    }
    options->events = *std::move(events);
  } else {
    options->events = sampler::DefaultCounterEvents();
  }
  return std::nullopt;
}

// Maps a CounterSet::Open or AttachedCounters::Open failure to a message and exit code.
int CounterOpenFailure(const absl::Status& status) {
  return PrintCliError(CliStep::kOpenCounters, status);
}

struct RunResult {
  std::optional<int> exit_code;  // set: stop with this code (error before the command ran)
  output::CounterRun run;
  int command_exit = 0;
  bool interrupted = false;
};

RunResult RunCommandOnce(const StatOptions& options, SignalReader& signals,
                         GroupSignalWitness* witness) {
  RunResult result;
  absl::StatusOr<std::string> program = sampler::FindProgram(options.command[0]);
  if (!program.ok()) {
    result.exit_code = PrintCliError(CliStep::kExecCommand, program.status());
    return result;
  }
  sampler::SpawnOptions spawn;
  spawn.program_path = *std::move(program);
  absl::StatusOr<sampler::ChildProcess> child =
      sampler::ChildProcess::Spawn(options.command, spawn);
  if (!child.ok()) {
    result.exit_code = PrintCliError(CliStep::kRun, child.status(),
                                     absl::StrCat("cannot start '", options.command[0], "'"));
    return result;
  }
  sampler::CounterOptions counter_options;
  counter_options.enable_on_exec = true;
  counter_options.per_thread = options.per_thread;
  absl::StatusOr<sampler::CounterSet> set =
      sampler::CounterSet::Open(options.events, child->pid(), counter_options);
  if (!set.ok()) {
    result.exit_code = CounterOpenFailure(set.status());
    return result;  // ~ChildProcess kills the never-released child
  }
  // Until its exec's COMM record arrives the child is still called after nativeprof.
  if (options.per_thread) set->NameTasks({CommOf(options.command[0])});
  rusage before{};
  getrusage(RUSAGE_CHILDREN, &before);
  const double start = MonotonicSeconds();
  // As perf stat does: every signal goes to the command, and its counts are printed after it.
  sampler::LaunchedTarget target(
      &*child, {.second_sigint_stops_waiting = false, .group_witness = witness});
  sampler::RecordLoopOptions loop;
  loop.signals = &signals;
  loop.counters = {&*set};
  absl::StatusOr<sampler::RecordLoopResult> ran = sampler::RunRecordLoop(target, loop);
  if (!ran.ok()) {
    result.exit_code = PrintCliError(CliStep::kExecCommand, ran.status());
    return result;
  }
  const int wait_status = *target.wait_status();  // a launched target is done once reaped
  const double end = MonotonicSeconds();
  rusage after{};
  getrusage(RUSAGE_CHILDREN, &after);
  // A signal that came after the last one was forwarded ends a -r series too.
  result.interrupted = signals.Pending() || (WIFSIGNALED(wait_status) &&
                                             (WTERMSIG(wait_status) == SIGINT ||
                                              WTERMSIG(wait_status) == SIGTERM));
  result.command_exit = sampler::ExitCodeFromWaitStatus(wait_status);
  result.run.elapsed_seconds = end - start;
  result.run.user_seconds = TimevalSeconds(after.ru_utime) - TimevalSeconds(before.ru_utime);
  result.run.sys_seconds = TimevalSeconds(after.ru_stime) - TimevalSeconds(before.ru_stime);
  if (options.per_thread) {
    absl::StatusOr<std::vector<sampler::ThreadCounters>> threads =
        set->ReadPerThread();
    if (!threads.ok()) {
      result.exit_code = PrintCliError(CliStep::kRun, threads.status());
      return result;
    }
    result.run.threads = *std::move(threads);
    if (set->lost_records() > 0) {
      Logger("main")->warn(
          "{} per-thread records were lost; those threads' counts stay with the main thread",
          set->lost_records());
    }
    if (const size_t incomplete = set->incomplete_tasks(); incomplete > 0) {
      Logger("main")->warn(
          "the kernel lost part of the exit counts of {} threads (many exited at once on several "
          "CPUs); their missing counts stay with the main thread",
          incomplete);
    }
  }
  absl::StatusOr<std::vector<sampler::CounterValue>> values = set->Read();
  if (!values.ok()) {
    result.exit_code = PrintCliError(CliStep::kRun, values.status());
    return result;
  }
  result.run.values = *std::move(values);
  return result;
}

// `stat -p PID`: counts until the process exits or SIGINT/SIGTERM arrives (not forwarded: the
// process is not ours). Returns an exit code; fills `run` on success.
int RunStatAttach(const StatOptions& options, SignalReader& signals, output::CounterRun* run) {
  absl::StatusOr<sampler::AttachedCounters> counters =
      sampler::AttachedCounters::Open(options.events, options.attach_pid, options.per_thread);
  if (!counters.ok()) return CounterOpenFailure(counters.status());
  const double start = MonotonicSeconds();
  sampler::AttachedTarget target({options.attach_pid});
  sampler::RecordLoopOptions loop;
  loop.signals = &signals;
  loop.counters = {&counters->set()};
  // Nothing is sampled and an attached target cannot fail to start: the loop only waits.
  (void)sampler::RunRecordLoop(target, loop);
  absl::Status disabled = counters->Disable();
  run->elapsed_seconds = MonotonicSeconds() - start;
  if (!disabled.ok()) Logger("main")->debug("disable: {}", disabled.ToString());
  if (options.per_thread) {
    absl::StatusOr<std::vector<sampler::ThreadCounters>> threads = counters->ReadPerThread();
    if (!threads.ok()) {
      return PrintCliError(CliStep::kRun, threads.status());
    }
    run->threads = *std::move(threads);
  }
  absl::StatusOr<std::vector<sampler::CounterValue>> values = counters->Read();
  if (!values.ok()) {
    return PrintCliError(CliStep::kRun, values.status());
  }
  run->values = *std::move(values);
  return kExitOk;
}

}  // namespace

int RunStatCommand(int argc, char** argv) {
  StatOptions options;
  if (std::optional<int> stop = ParseOptions(argc, argv, &options)) return *stop;
  if (!options.json_path.empty()) {
    absl::Status writable = CheckOutputWritable(options.json_path);
    if (!writable.ok()) {
      return PrintCliError(CliStep::kWriteOutput, writable,
                           absl::StrCat("cannot write '", options.json_path, "'"),
                           "choose another --json path");
    }
  }
  // SIGINT/SIGTERM never end nativeprof here: they go to the command (or stop counting an
  // attached process), and the counts are printed. SIGHUP keeps its default action.
  absl::StatusOr<SignalReader> signals =
      SignalReader::Create({.signals = {SIGINT, SIGTERM}, .discard_unread = true});
  if (!signals.ok()) return PrintCliError(CliStep::kRun, signals.status());
  std::vector<output::CounterRun> runs;
  int exit_code = kExitOk;
  if (options.attach_pid > 0) {
    output::CounterRun run;
    exit_code = RunStatAttach(options, *signals, &run);
    if (exit_code != kExitOk) return exit_code;
    runs.push_back(std::move(run));
  } else {
    // Reaped when this returns, after every run's RUSAGE_CHILDREN was read.
    absl::StatusOr<GroupSignalWitness> witness = GroupSignalWitness::Start(signals->set());
    for (int i = 0; i < options.repeat; ++i) {
      RunResult result = RunCommandOnce(options, *signals, witness.ok() ? &*witness : nullptr);
      if (result.exit_code.has_value()) return *result.exit_code;
      runs.push_back(std::move(result.run));
      exit_code = result.command_exit;
      if (result.interrupted) break;  // Ctrl-C ends the series, as in perf stat -r
    }
  }
  output::CounterSummary summary = output::SummarizeRuns(options.command, runs);
  summary.attached_pid = options.attach_pid;
  std::string table = output::FormatCounterSummary(summary);
  std::fputs(table.c_str(), stderr);
  if (!options.json_path.empty()) {
    const std::string json = output::RenderJsonDocument(output::CounterSummaryToJson(summary));
    OutputFallback fallback;
    int write_exit = kExitOk;
    fallback.Write(
        options.json_path, [&](const std::string& to) { return WriteFileAtomically(to, json); },
        &write_exit);
    if (write_exit != kExitOk) return write_exit;
  }
  return exit_code;
}

}  // namespace nativeprof::tools
