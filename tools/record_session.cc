#include "tools/record_session.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/group_signal_witness.h"
#include "base/logging.h"
#include "base/scheduling.h"
#include "base/signal_reader.h"
#include "output/counter_report.h"
#include "sampler/blocked_thread.h"
#include "sampler/child_process.h"
#include "sampler/counter_attach.h"
#include "sampler/counter_set.h"
#include "sampler/cpu_list.h"
#include "sampler/proc_maps.h"
#include "sampler/record_loop.h"
#include "sampler/record_sorter.h"
#include "sampler/session.h"
#include "sampler/target.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/profile_builder.h"
#include "tools/alloc_setup.h"
#include "tools/cli_error.h"
#include "tools/exit_codes.h"
#include "tools/record_report.h"
#include "unwind/stack_collector.h"

namespace nativeprof::tools {
namespace {

void PrintError(absl::string_view message) {
  std::fprintf(stderr, "nativeprof: %.*s\n", static_cast<int>(message.size()), message.data());
}

void ApplyCallGraph(const RecordOptions& o, sampler::SessionOptions* so) {
  so->sampling.event = o.event;
  so->sampling.frequency_hz = o.frequency_hz;
  unwind::RequestSampleFields(o.call_graph, o.dwarf_stack_bytes, &so->sampling);
  so->ring_pages = o.ring_pages;
  so->sampling.off_cpu = o.off_cpu;
  so->sampling.alloc = o.alloc_rate_bytes.has_value();
  so->sampling.switch_stack_user_bytes =
      o.switch_stack_bytes.value_or(so->sampling.stack_user_bytes);
  // Stack copies make DWARF samples ~8 KiB each: a ring that fits perf_event_mlock_kb holds only
  // a few milliseconds of them. With CAP_IPC_LOCK (root) the limit does not apply, so give each
  // CPU up to 2 MiB, 4 MiB with switch samples (fewer wakeups, more slack before a busy drain
  // thread loses samples).
  if (o.ring_pages == 0 && o.call_graph == unwind::CallGraphMode::kDwarf && ::geteuid() == 0) {
    so->ring_pages =
        std::max(sampler::Session::UnlimitedDwarfRingPages(sampler::OnlineCpus().size(),
                                                            /*switch_samples=*/o.off_cpu),
                 sampler::Session::DefaultRingPages(1));
  }
}

// --off-cpu -p: the stacks of the threads already blocked as recording starts, which no switch
// sample will give their current interval. Read just before the events are enabled (reading
// takes tens of milliseconds, in which the rings would fill); a thread that ran during its read
// is skipped, and one that ran after it is dropped again just before enabling (ThreadRanSince).
// `noted` gets each snapshot taken, without its stack copy.
void NoteBlockedThreads(const sampler::Session& session, int pid,
                        const std::vector<sampler::ProcMapsEntry>& maps,
                        unwind::StackCollector* collector,
                        std::vector<sampler::BlockedThread>* noted) {
  const perf_event_attr& attr = session.attr();
  if (attr.sample_regs_user == 0 || attr.sample_stack_user == 0) return;  // --call-graph fp
  // A snapshot's time is CLOCK_MONOTONIC; without use_clockid the records' is perf's own clock.
  if (attr.use_clockid == 0) return;
  absl::StatusOr<std::vector<pid_t>> tids = sampler::ListThreads(pid);
  if (!tids.ok()) return;
  // Kernel frames where switch samples have them too, so both describe a blocked call alike.
  const bool kernel_frames = session.switch_attr().exclude_callchain_kernel == 0;
  std::vector<sampler::BlockedThread> snapshots;
  for (pid_t tid : *tids) {
    absl::StatusOr<std::optional<sampler::BlockedThread>> blocked =
        sampler::SnapshotBlockedThread(pid, tid, attr.sample_stack_user, maps, kernel_frames);
    if (blocked.ok() && blocked->has_value()) snapshots.push_back(std::move(**blocked));
  }
  // /proc shows the kernel frames by name: kallsyms places them, read once for all threads.
  std::optional<symbolize::SymbolTable> kallsyms;
  if (std::any_of(snapshots.begin(), snapshots.end(),
                  [](const sampler::BlockedThread& t) { return !t.kernel_frames.empty(); })) {
    absl::StatusOr<symbolize::SymbolTable> table = symbolize::LoadKallsyms();
    if (table.ok()) {
      kallsyms = std::move(*table);
    } else {
      Logger("main")->debug("kernel frames of threads blocked at the start left out: {}",
                            table.status().ToString());
    }
  }
  for (const sampler::BlockedThread& t : snapshots) {
    std::vector<uint64_t> kernel_avmas;
    if (kallsyms.has_value()) {
      kernel_avmas = symbolize::ResolveKernelFrames(*kallsyms, t.kernel_frames);
    }
    // One view per rbp guess (each views registers of its own); none: rbp 0.
    const size_t n = std::max<size_t>(t.bp_guesses.size(), 1);
    std::vector<std::vector<uint64_t>> regs(n), callchains(n);
    std::vector<sampler::SampleView> guesses;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t bp = t.bp_guesses.empty() ? 0 : t.bp_guesses[i];
      guesses.push_back(sampler::BlockedThreadSample(t, bp, attr.sample_regs_user, kernel_avmas,
                                                     &regs[i], &callchains[i]));
    }
    collector->OnBlockedAtStart(guesses);
  }
  for (sampler::BlockedThread& t : snapshots) {
    t.stack = std::vector<uint8_t>();  // freed: only the thread and its schedstat are looked at
    noted->push_back(std::move(t));
  }
}

// Raises the priority of this thread, which opens the events and drains the rings, unless
// --no-boost.
DrainScheduling BoostDrainThread(const RecordOptions& o) {
  DrainScheduling d;
  if (absl::StatusOr<double> age = ProcessAgeSeconds(); age.ok()) d.startup_seconds = *age;
  if (!o.boost) {
    d.boost_disabled = true;
    return d;
  }
  // --off-cpu: the target switches often and every switch can wake this thread (see
  // RaiseThreadPriority): a real-time drain thread would preempt it each time.
  d.boost = RaiseThreadPriority(SchedulerCalls::Real(), /*nice_only=*/o.off_cpu);
  d.realtime_skipped = o.off_cpu;
  if (d.boost.kind == PriorityKind::kUnchanged) {
    Logger("main")->debug("drain thread priority left as it was: {}", d.boost.why);
  } else {
    Logger("main")->debug("drain thread runs at {}", d.boost.Describe());
  }
  return d;
}

// How long a freshly exec'd process may take to map its libraries and run their constructors;
// one that has not attached the allocation library by then did not get it.
constexpr uint64_t kLoaderGraceNs = 200'000'000;

// Whether running process `pid` maps a file named `name` (a library, by its file name).
bool HasLibraryMapped(int32_t pid, absl::string_view name) {
  absl::StatusOr<std::vector<sampler::ProcMapsEntry>> maps = sampler::ReadProcMaps(pid);
  if (!maps.ok()) return false;
  return absl::c_any_of(*maps, [name](const sampler::ProcMapsEntry& e) {
    return absl::EndsWith(e.path, absl::StrCat("/", name));
  });
}

std::optional<SchedStat> SchedNow() {
  absl::StatusOr<SchedStat> s = ReadThreadSchedStat();
  if (!s.ok()) return std::nullopt;
  return *s;
}

double NsToSeconds(uint64_t from, uint64_t to) {
  return to > from ? static_cast<double>(to - from) * 1e-9 : 0.0;
}

// Fills the run-queue figures of `d` from readings taken right after the boost, when sampling
// started, and (now) after the last drain.
void NoteWaits(const std::optional<SchedStat>& setup, const std::optional<SchedStat>& start,
               DrainScheduling* d) {
  const std::optional<SchedStat> end = SchedNow();
  if (!start.has_value() || !end.has_value()) return;
  d->wait_seconds = NsToSeconds(start->run_queue_ns, end->run_queue_ns);
  d->on_cpu_seconds = NsToSeconds(start->on_cpu_ns, end->on_cpu_ns);
  if (setup.has_value()) {
    d->setup_wait_seconds = NsToSeconds(setup->run_queue_ns, start->run_queue_ns);
  }
}

// Off-CPU intervals still open when sampling stopped end then: at the stop in record time
// (CLOCK_MONOTONIC), or at the last record where the kernel's clock is not comparable with ours.
void FinishOffCpu(const sampler::Session& session, uint64_t stop_monotonic_ns,
                  unwind::StackCollector* collector) {
  if (!session.off_cpu()) return;
  const bool monotonic = session.attr().use_clockid != 0;
  collector->mutable_off_cpu().Finish(monotonic ? stop_monotonic_ns
                                                : collector->stats().last_time_ns);
  collector->CompleteBlockedAtStartStacks();
}

double MillisecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// The attached process's threads and mappings as records, into `collector`. A main thread that
// called pthread_exit (a zombie while the others run) names the process but is no thread of the
// recording.
void SynthesizeAttachedState(pid_t pid, const std::vector<sampler::ProcMapsEntry>& maps,
                             unwind::StackCollector* collector) {
  sampler::SynthesizeProcessState(pid, maps, *collector);
  if (sampler::ThreadHasEnded(pid, pid)) collector->mutable_processes().ForgetThread(pid);
}

// A signal that arrived before the command started or the processes' events were enabled:
// nothing was recorded, nothing is started, and no output (an earlier profile at that path) is
// written over with an empty one. The exit status is 128 + the signal's number.
std::optional<int> InterruptedBeforeStart(SignalReader& signals) {
  if (!signals.Pending()) return std::nullopt;
  const int sig = signals.Read();
  if (sig == 0) return std::nullopt;
  PrintError(absl::StrCat("interrupted (", strsignal(sig), ") before recording started; "
                          "nothing was recorded"));
  return 128 + sig;
}

// `record -p`: samples running processes without touching them. Stops on SIGINT/SIGTERM (not
// forwarded: the targets keep running), after --duration, or when every target has exited.
int RunAttached(const RecordOptions& o, unwind::Unwinder& unwinder, SignalReader& signals,
                const std::optional<SchedStat>& setup_sched, DrainScheduling scheduling) {
  sampler::SessionOptions session_options;
  ApplyCallGraph(o, &session_options);
  session_options.sampling.enable_on_exec = false;
  for (int pid : o.pids) {
    if (pid == ::getpid()) {
      PrintError(absl::StrCat("-p ", pid, " is this nativeprof itself; give the PID of the "
                              "process to profile"));
      return kExitUsage;
    }
    if (sampler::IsKernelThread(pid)) {
      PrintError(absl::StrCat("-p ", pid, " is a kernel thread, which has no user space to "
                              "sample; record -p profiles user processes"));
      return kExitUsage;
    }
    absl::StatusOr<std::vector<pid_t>> tids = sampler::ListThreads(pid);
    if (!tids.ok()) {
      return PrintCliError(CliStep::kRun, tids.status());
    }
    session_options.targets.insert(session_options.targets.end(), tids->begin(), tids->end());
  }
  auto opening = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<sampler::Session>> session =
      sampler::Session::Open(session_options);
  if (!session.ok()) {
    if (absl::IsUnavailable(session.status())) {
      return PrintCliError(CliStep::kOpenEvents, session.status(),
                           "the process exited while attaching");
    }
    if (absl::IsPermissionDenied(session.status())) {
      return PrintCliError(CliStep::kOpenEvents, session.status(), {},
                           "attaching to another user's process also needs CAP_PERFMON or "
                           "ptrace rights (/proc/sys/kernel/yama/ptrace_scope)");
    }
    return PrintCliError(CliStep::kOpenEvents, session.status());
  }
  for (const std::string& note : (*session)->notes()) PrintError(note);
  Logger("main")->debug("sampling events on {} threads opened in {:.1f} ms",
                        session_options.targets.size(), MillisecondsSince(opening));

  // Counters for a single attached process (the usual case); several PIDs get stacks only.
  std::optional<sampler::AttachedCounters> counters;
  if (o.counters && o.pids.size() == 1) {
    opening = std::chrono::steady_clock::now();
    absl::StatusOr<sampler::AttachedCounters> opened =
        sampler::AttachedCounters::Open(o.CounterEvents(), o.pids[0], /*per_thread=*/false);
    if (opened.ok()) {
      counters.emplace(*std::move(opened));
      Logger("main")->debug("counters on {} threads opened in {:.1f} ms", counters->thread_count(),
                            MillisecondsSince(opening));
    } else {
      PrintError(absl::StrCat("counters disabled: ", opened.status().message()));
    }
  }

  unwind::StackCollector collector(&unwinder, /*keep_timeline=*/true);
  std::unique_ptr<symbolize::Symbolizer> symbolizer = symbolize::MakeMappingAwareSymbolizer(collector, o.symbolizer);
  if ((*session)->off_cpu()) {
    collector.track_off_cpu();
    // Set again as sampling starts, after the state read below.
    if ((*session)->attr().use_clockid != 0) {
      collector.mutable_off_cpu().set_recording_start(sampler::MonotonicNowNs());
    }
  }
  // The existing mappings come from /proc, and with --off-cpu the stacks of threads blocked
  // now. Read before enabling: what takes time (the blocked threads' stacks, /proc/kallsyms for
  // their kernel frames: 70 ms for 21 threads here) would otherwise let the rings fill before the
  // first drain, and lost the first ~2,000 switches of a busy process.
  opening = std::chrono::steady_clock::now();
  std::vector<std::vector<sampler::ProcMapsEntry>> maps_before(o.pids.size());
  std::vector<sampler::BlockedThread> blocked_at_start;
  for (size_t i = 0; i < o.pids.size(); ++i) {
    absl::StatusOr<std::vector<sampler::ProcMapsEntry>> maps = sampler::ReadProcMaps(o.pids[i]);
    if (!maps.ok()) continue;
    SynthesizeAttachedState(o.pids[i], *maps, &collector);
    if ((*session)->off_cpu()) {
      NoteBlockedThreads(**session, o.pids[i], *maps, &collector, &blocked_at_start);
    }
    maps_before[i] = *std::move(maps);
  }
  Logger("main")->debug("state of {} attached processes read in {:.1f} ms", o.pids.size(),
                        MillisecondsSince(opening));
  // A thread that ran between its snapshot and now is in another interval (or blocked
  // elsewhere): its snapshot is dropped rather than given to that interval. Checked before
  // enabling: a thread that wakes after it is seen doing so by the events, and keeps its own.
  for (const sampler::BlockedThread& t : blocked_at_start) {
    if (sampler::ThreadRanSince(t)) {
      collector.ForgetBlockedAtStart(static_cast<int32_t>(t.pid), static_cast<int32_t>(t.tid));
    }
  }
  // The threads there as recording starts are listed even if they never run while recording.
  // Those runnable now but on no CPU (preempted) wait for a CPU until their first switch-in.
  // Read last, right before enabling: a thread that blocks after this read and before the events
  // are enabled would count its sleep as waiting.
  if ((*session)->off_cpu()) {
    for (int pid : o.pids) {
      absl::StatusOr<std::vector<pid_t>> tids = sampler::ListThreads(pid);
      if (!tids.ok()) continue;
      for (pid_t tid : *tids) {
        const absl::StatusOr<char> state = sampler::ThreadStateLetter(pid, tid);
        // A main thread that called pthread_exit stays listed, a zombie, while the others run:
        // it will never run again, and its "lifetime" here would all be blocked time.
        if (state.ok() && (*state == 'Z' || *state == 'X')) continue;
        collector.mutable_off_cpu().NoteExistingThread(pid, tid, state.ok() && *state == 'R');
      }
    }
  }
  // --duration counts from here, the start of sampling.
  const auto start = std::chrono::steady_clock::now();
  const std::optional<SchedStat> start_sched = SchedNow();
  if ((*session)->off_cpu() && (*session)->attr().use_clockid != 0) {
    collector.mutable_off_cpu().set_recording_start(sampler::MonotonicNowNs());
  }
  // Attaching to many threads takes a while (~1 ms per thread): a Ctrl-C meanwhile.
  if (std::optional<int> code = InterruptedBeforeStart(signals)) return *code;
  if (absl::Status st = (*session)->Enable(); !st.ok()) return PrintCliError(CliStep::kRun, st);
  // The kernel reports only mappings made from now on: the maps again, for what was mapped
  // since the read above (a mapping seen twice would just replace itself).
  for (size_t i = 0; i < o.pids.size(); ++i) {
    absl::StatusOr<std::vector<sampler::ProcMapsEntry>> maps = sampler::ReadProcMaps(o.pids[i]);
    if (!maps.ok()) continue;
    // /proc lists mappings by address: a binary search finds an unchanged one.
    const std::vector<sampler::ProcMapsEntry>& before = maps_before[i];
    std::erase_if(*maps, [&](const sampler::ProcMapsEntry& e) {
      auto it = std::lower_bound(before.begin(), before.end(), e.start_avma,
                                 [](const sampler::ProcMapsEntry& b, uint64_t start) {
                                   return b.start_avma < start;
                                 });
      return it != before.end() && *it == e;
    });
    SynthesizeAttachedState(o.pids[i], *maps, &collector);
  }

  sampler::AttachedTarget target(o.pids);
  sampler::RecordLoopOptions loop;
  loop.session = session->get();
  loop.sink = &collector;
  loop.signals = &signals;
  if (o.duration_seconds > 0) {
    loop.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(o.duration_seconds));
  }
  // The targets keep running after the loop: their events stop before the last drain.
  loop.disable_before_final_drain = true;
  absl::StatusOr<sampler::RecordLoopResult> ran = sampler::RunRecordLoop(target, loop);
  if (!ran.ok()) {  // AttachedTarget::Start cannot fail; kept for the contract
    return PrintCliError(CliStep::kRun, ran.status());
  }
  FinishOffCpu(**session, sampler::MonotonicNowNs(), &collector);
  RunState state;
  state.signals_received = ran->signals_received;
  state.interrupted = ran->end == sampler::LoopEnd::kSignal;
  state.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.exit_code = target.exit_code();
  state.scheduling = std::move(scheduling);
  NoteWaits(setup_sched, start_sched, &state.scheduling);
  std::vector<sampler::CounterValue> counter_values;
  if (counters.has_value()) {
    (void)counters->Disable();
    absl::StatusOr<std::vector<sampler::CounterValue>> values = counters->Read();
    if (values.ok()) counter_values = *std::move(values);
  }
  return FinishRecording(o, **session, collector, *symbolizer, counter_values, state);
}

}  // namespace

int RunRecording(const RecordOptions& o) {
  // A reader of nativeprof's stderr that went away (`2>&1 | head`) must not kill it mid-run
  // (the command would be left waiting to be released, the profile unwritten, its exit status
  // replaced by 141): writes to it fail instead. The command gets the default back
  // (ChildProcess).
  std::signal(SIGPIPE, SIG_IGN);
  // First of all: on a saturated machine every slice of CPU that this thread uses at normal
  // priority costs a wait behind every other runnable task (a few ms of setup and one event
  // opened per thread and CPU became seconds). The command forked later must not inherit it:
  // SCHED_RESET_ON_FORK resets it, and the child restores the nice it was started with.
  DrainScheduling scheduling = BoostDrainThread(o);
  const std::optional<SchedStat> setup_sched = SchedNow();
  auto log = Logger("main");
  // Before anything is created, even the probes of the outputs: a Ctrl-C at start-up left a
  // probe's OUT.tmp.PID behind. Signals that arrive after the command ended (while the outputs
  // are written) are dropped at the end: they killed nativeprof by their default action, and its
  // exit status was no longer the command's.
  absl::StatusOr<SignalReader> signals = SignalReader::Create({.discard_unread = true});
  if (!signals.ok()) return PrintCliError(CliStep::kRun, signals.status());
  auto interrupted_before_start = [&] { return InterruptedBeforeStart(*signals); };
  // A bad command line first, before any file is probed.
  if (o.duration_seconds > 0 && o.pids.empty()) {
    PrintError("--duration applies to -p PID; with a command, stop it with Ctrl-C");
    return kExitUsage;
  }
  // Everything that can be checked before the target starts is checked now, so a bad path never
  // costs a run.
  for (const RecordOutput& out : o.outputs) {
    absl::Status st = CheckOutputWritable(out.path);
    if (!st.ok()) {
      return PrintCliError(CliStep::kWriteOutput, st,
                           absl::StrCat("cannot write output '", out.path, "'"),
                           "choose another -o");
    }
  }
  if (absl::Status st = CheckOutputsApart(o); !st.ok()) {
    return PrintCliError(CliStep::kParseOptions, st);
  }
  // The files written beside an -o (its views, the metadata): one that cannot be (a directory of
  // that name) would otherwise go to the fallback directory only once the run is over. Beside an
  // -o that is a stream none is written.
  for (const RecordFile& f : RecordFiles(o)) {
    if (f.path == f.output || IsStreamPath(f.output)) continue;
    if (absl::Status st = CheckOutputWritable(f.path); !st.ok()) {
      return PrintCliError(CliStep::kWriteOutput, st,
                           absl::StrCat("a file written beside -o ", f.output),
                           "choose another -o, or move what is in the way");
    }
  }

  absl::StatusOr<std::unique_ptr<unwind::Unwinder>> unwinder =
      unwind::MakeUnwinder(o.call_graph, o.dwarf_backend, o.symbolizer.debug_dirs);
  if (!unwinder.ok()) return PrintCliError(CliStep::kParseOptions, unwinder.status());

  if (std::optional<int> code = interrupted_before_start()) return *code;
  if (!o.pids.empty()) {
    // No program path to compare: the attached processes' own are ELF files, spared as such.
    if (absl::Status st = CheckOutputsSpareFiles(o, /*program=*/""); !st.ok()) {
      return PrintCliError(CliStep::kParseOptions, st, {}, "choose another -o");
    }
    // A thread id stands for its process, as with perf -p: samples, mappings and threads are
    // the process's, and would not be found under the thread's id.
    RecordOptions attached = o;
    attached.pids.clear();
    for (int pid : o.pids) {
      absl::StatusOr<pid_t> process = sampler::ProcessOfThread(pid);
      if (!process.ok()) {
        return PrintCliError(CliStep::kRun, process.status(), {},
                             "check the PID (ps -e), or run the program under record -- CMD");
      }
      if (*process != pid) {
        PrintError(absl::StrCat(pid, " is a thread of process ", *process,
                                ": recording the whole process"));
      }
      // A zombie has exited: nothing runs there to record (the kernel would refuse, said as
      // "exited while attaching"). Every thread a zombie: a main thread that called
      // pthread_exit is one while the others run on, and they are recorded.
      auto all_zombies = [](pid_t pid) {
        std::error_code ec;
        bool any = false;
        for (const auto& entry : std::filesystem::directory_iterator(
                 absl::StrCat("/proc/", pid, "/task"), ec)) {
          pid_t tid = 0;
          if (!absl::SimpleAtoi(entry.path().filename().string(), &tid)) continue;
          absl::StatusOr<char> state = sampler::TaskState(pid, tid);
          if (!state.ok() || *state != 'Z') return false;
          any = true;
        }
        return any;
      };
      if (all_zombies(*process)) {
        PrintError(absl::StrCat("process ", *process, " has exited (a zombie its parent has not "
                                "reaped): there is nothing to record; check the PID (ps -e)"));
        return kExitFailure;
      }
      if (std::find(attached.pids.begin(), attached.pids.end(), *process) ==
          attached.pids.end()) {
        attached.pids.push_back(*process);
      }
    }
    return RunAttached(attached, **unwinder, *signals, setup_sched, std::move(scheduling));
  }

  // Before the command and the channel exist, so it holds neither. Without it a signal sent to
  // the whole process group may reach the command twice (docs/record.md).
  absl::StatusOr<GroupSignalWitness> witness = GroupSignalWitness::Start(signals->set());
  if (!witness.ok()) Logger("main")->debug("no process-group signal witness: {}", witness.status());

  sampler::SpawnOptions spawn;
  if (scheduling.boost.kind != PriorityKind::kUnchanged) {
    spawn.nice = scheduling.boost.original_nice;
  }
  spawn.working_directory = o.command_directory;
  // So that a command still running after a second signal is killed with its whole tree, as
  // docs/record.md promises: a shell's foreground job survived a SIGKILL to the shell alone.
  spawn.adopt_orphans = true;
  if (witness.ok()) spawn.other_children = {witness->pid()};
  // Before anything is opened or said (the cycles fallback note, say): a command that cannot
  // run is the one thing to report.
  absl::StatusOr<std::string> program = sampler::FindProgram(o.command[0], spawn);
  if (!program.ok()) return PrintCliError(CliStep::kExecCommand, program.status());
  spawn.program_path = *program;
  if (absl::Status st = CheckOutputsSpareFiles(o, *program); !st.ok()) {
    return PrintCliError(CliStep::kParseOptions, st, {}, "choose another -o");
  }
  std::optional<sampler::AllocChannel> alloc_channel;
  if (o.alloc_rate_bytes.has_value()) {
    absl::StatusOr<std::string> preload = FindAllocPreload();
    if (!preload.ok()) return PrintCliError(CliStep::kRun, preload.status());
    if (absl::Status st = CheckInterposable(*program); !st.ok()) {
      return PrintCliError(CliStep::kParseOptions, st);
    }
    absl::StatusOr<sampler::AllocChannel> channel = CreateAllocChannel(*o.alloc_rate_bytes, o.dwarf_stack_bytes);
    if (!channel.ok()) return PrintCliError(CliStep::kRun, channel.status());
    alloc_channel.emplace(*std::move(channel));
    std::vector<std::string> preload_notes;
    spawn.set_environment = AllocEnvironment(*preload, *alloc_channel, &preload_notes);
    for (const std::string& note : preload_notes) PrintError(absl::StrCat("warning: ", note));
  }
  if (std::optional<int> code = interrupted_before_start()) return *code;
  absl::StatusOr<sampler::ChildProcess> child = sampler::ChildProcess::Spawn(o.command, spawn);
  if (!child.ok()) return PrintCliError(CliStep::kRun, child.status());

  sampler::SessionOptions session_options;
  ApplyCallGraph(o, &session_options);
  session_options.targets = {child->pid()};
  if (alloc_channel.has_value()) session_options.alloc_channel = &*alloc_channel;
  absl::StatusOr<std::unique_ptr<sampler::Session>> session =
      sampler::Session::Open(session_options);
  if (!session.ok()) return PrintCliError(CliStep::kOpenEvents, session.status());
  for (const std::string& note : (*session)->notes()) PrintError(note);

  std::optional<sampler::CounterSet> counters;
  if (o.counters) {
    sampler::CounterOptions counter_options;
    counter_options.enable_on_exec = true;
    counter_options.inherit = true;
    absl::StatusOr<sampler::CounterSet> opened =
        sampler::CounterSet::Open(o.CounterEvents(), child->pid(), counter_options);
    if (opened.ok()) {
      counters.emplace(*std::move(opened));
    } else {
      PrintError(absl::StrCat("counters disabled: ", opened.status().message()));
    }
  }

  unwind::StackCollector collector(unwinder->get(), /*keep_timeline=*/true);
  std::unique_ptr<symbolize::Symbolizer> symbolizer = symbolize::MakeMappingAwareSymbolizer(collector, o.symbolizer);
  if ((*session)->off_cpu()) collector.track_off_cpu();
  if (alloc_channel.has_value()) {
    collector.mutable_allocations().set_rate(alloc_channel->rate_bytes());
    sampler::AllocChannel* channel = &*alloc_channel;
    collector.set_alloc_stack_observer(
        [channel](uint32_t tid, uint64_t stack_high) { channel->SetStackHint(tid, stack_high); });
    // A process killed by a signal never wrote the frees its threads had batched (--alloc=1).
    collector.set_process_exit_observer([channel, &collector](uint32_t pid, uint64_t time_ns) {
      for (const sampler::BatchedFree& f : channel->OnProcessExited(pid)) {
        collector.mutable_allocations().OnFree(f.pid, f.block_avma, f.temporary, time_ns);
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  const std::optional<SchedStat> start_sched = SchedNow();
  // Like perf: the command decides how to end on a signal; nativeprof drains until it exits.
  sampler::LaunchedTarget target(
      &*child, {.second_sigint_stops_waiting = true,
                .group_witness = witness.ok() ? &*witness : nullptr});
  sampler::RecordLoopOptions loop;
  loop.session = session->get();
  loop.sink = &collector;
  loop.signals = &*signals;
  // Frees batched and never written (by processes still running, or killed in the last moments),
  // and when they were taken: counted after the last drain.
  std::vector<sampler::BatchedFree> left_frees;
  uint64_t left_frees_ns = 0;
  if (alloc_channel.has_value()) {
    loop.before_final_drain = [&] {
      left_frees = alloc_channel->StopWriting();
      left_frees_ns = sampler::MonotonicNowNs();
    };
  }
  absl::StatusOr<sampler::RecordLoopResult> ran = sampler::RunRecordLoop(target, loop);
  if (!ran.ok()) return PrintCliError(CliStep::kExecCommand, ran.status());
  // CLOCK_MONOTONIC ns (steady_clock's), the records' clock with use_clockid.
  const uint64_t stopped_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(ran->stopped_at.time_since_epoch())
          .count());
  FinishOffCpu(**session, stopped_ns, &collector);
  RunState state;
  state.signals_received = ran->signals_received;
  state.interrupted = target.forwarded_signal();
  state.stopped_waiting = target.stopped_waiting();
  state.duration_seconds = std::chrono::duration<double>(ran->stopped_at - start).count();
  state.exit_code = target.exit_code();
  state.scheduling = std::move(scheduling);
  NoteWaits(setup_sched, start_sched, &state.scheduling);
  if (alloc_channel.has_value()) {
    for (const sampler::BatchedFree& f : left_frees) {
      collector.mutable_allocations().OnFree(f.pid, f.block_avma, f.temporary, left_frees_ns);
    }
    collector.mutable_allocations().Finish();
    AllocRun run;
    run.totals = alloc_channel->Totals();
    for (const sampler::ProcessHeap& heap : alloc_channel->ProcessHeaps()) {
      const auto pid = static_cast<int32_t>(heap.pid);
      run.process_heaps.push_back({heap, collector.processes().ThreadName(pid, pid)});
    }
    // Exec records carry the channel's clock only with use_clockid (a kernel from 4.1).
    if ((*session)->attr().use_clockid != 0) {
      for (const auto& [pid, process] : collector.processes().processes()) {
        if (process->exec_ns == 0) continue;
        if (alloc_channel->ImageAttached(static_cast<uint32_t>(pid), process->exec_ns) != false) {
          continue;
        }
        // One still running may not have reached the library's constructor yet (a shell's
        // background `sleep` exec'd as the recording stopped): not unhooked if it has the
        // library mapped, or if it exec'd too recently to tell.
        if (!process->exited && (stopped_ns < process->exec_ns + kLoaderGraceNs ||
                                 HasLibraryMapped(pid, kAllocPreloadName))) {
          continue;
        }
        run.unhooked.push_back({static_cast<uint32_t>(pid), process->name});
      }
      std::sort(run.unhooked.begin(), run.unhooked.end());
      // What the channel says of a pid's malloc is of its last image that attached, not of an
      // unhooked one exec'd after it.
      for (NamedProcessHeap& heap : run.process_heaps) {
        const std::pair<uint32_t, std::string> key{heap.heap.pid, ""};
        auto at = std::lower_bound(run.unhooked.begin(), run.unhooked.end(), key);
        if (at != run.unhooked.end() && at->first == heap.heap.pid) {
          heap.heap.malloc_elsewhere = false;
        }
      }
    }
    run.rate_bytes = alloc_channel->rate_bytes();
    run.duration_seconds = state.duration_seconds;
    run.live_over_time = alloc_channel->live_over_time();
    // The command's own, with what it reaped: not getrusage(RUSAGE_CHILDREN), the largest of
    // every child of nativeprof's process, which cargo nativeprof's build was before its exec.
    if (const std::optional<rusage> usage = child->usage(); usage.has_value()) {
      run.peak_rss_bytes = static_cast<uint64_t>(usage->ru_maxrss) * 1024;
    }
    state.alloc = run;
  }
  if (state.stopped_waiting && !target.wait_status().has_value()) {
    PrintError("second interrupt: stopped waiting for the target; writing what was recorded");
  }

  std::vector<sampler::CounterValue> counter_values;
  if (counters.has_value()) {
    absl::StatusOr<std::vector<sampler::CounterValue>> values = counters->Read();
    if (values.ok()) {
      counter_values = *std::move(values);
    } else {
      PrintError(absl::StrCat("cannot read counters: ", values.status().message()));
    }
  }

  return FinishRecording(o, **session, collector, *symbolizer, counter_values, state);
}

}  // namespace nativeprof::tools
