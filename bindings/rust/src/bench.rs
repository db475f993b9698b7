//! [`BenchmarkProfiler`]: one profile per benchmark, written into a directory the harness names.
//! The logic of the Criterion hook, usable from any harness; reports failures as one stderr
//! line and never panics, because a profiler must not abort the benchmarks.
use std::fs;
use std::path::Path;

use crate::{Error, Options, Profiler};

/// Folded stacks (`comm;main;...;leaf COUNT` lines), what `nativeprof convert`, inferno,
/// flamegraph.pl and speedscope read.
pub const FOLDED_FILE: &str = "nativeprof.folded";
/// The previous run's [`FOLDED_FILE`], kept so `nativeprof diff nativeprof.previous.folded
/// nativeprof.folded` compares the last two profiles of a benchmark (before and after a change).
pub const PREVIOUS_FOLDED_FILE: &str = "nativeprof.previous.folded";
/// The flame graph.
pub const SVG_FILE: &str = "flamegraph.svg";
/// The counter table `nativeprof record` prints.
pub const COUNTERS_FILE: &str = "counters.txt";

/// Profiles one benchmark at a time: [`start`](Self::start) resets and starts, [`stop`]
/// (Self::stop) stops and writes [`FOLDED_FILE`], [`SVG_FILE`] and (when counting)
/// [`COUNTERS_FILE`] into the benchmark's directory, creating it. The libnativeprof profiler is
/// created at the first `start`, so a run that never profiles never opens a perf event.
#[derive(Debug)]
pub struct BenchmarkProfiler {
    options: Options,
    profiler: Option<Profiler>,
    running: bool,
    create_failed: bool,
}

impl BenchmarkProfiler {
    pub fn new(options: Options) -> Self {
        BenchmarkProfiler {
            options,
            profiler: None,
            running: false,
            create_failed: false,
        }
    }

    fn complain(id: &str, what: &str, e: &Error) {
        eprintln!("nativeprof: {id}: {what}: {e}");
    }

    /// Drops what an earlier benchmark left and starts sampling. A failure (no perf access,
    /// another profiler running) is printed once and the benchmark runs unprofiled.
    pub fn start(&mut self, benchmark_id: &str) {
        if self.running || self.create_failed {
            return;
        }
        if self.profiler.is_none() {
            match Profiler::new(&self.options) {
                Ok(p) => self.profiler = Some(p),
                Err(e) => {
                    // Options do not change: later benchmarks would fail the same way.
                    self.create_failed = true;
                    return Self::complain(benchmark_id, "cannot create the profiler", &e);
                }
            }
        }
        let Some(p) = self.profiler.as_mut() else {
            return;
        };
        if let Err(e) = p.reset().and_then(|()| p.start()) {
            return Self::complain(benchmark_id, "cannot start profiling", &e);
        }
        self.running = true;
    }

    /// Stops and writes the benchmark's files into `dir`. Returns whether everything was
    /// written; failures are printed.
    pub fn stop(&mut self, benchmark_id: &str, dir: &Path) -> bool {
        if !self.running {
            return false;
        }
        self.running = false;
        let Some(p) = self.profiler.as_mut() else {
            return false;
        };
        if let Err(e) = p.stop() {
            Self::complain(benchmark_id, "cannot stop profiling", &e);
            return false;
        }
        if let Err(e) = fs::create_dir_all(dir) {
            eprintln!(
                "nativeprof: {benchmark_id}: cannot create {}: {e}",
                dir.display()
            );
            return false;
        }
        // A missing earlier profile is the normal first run; any other failure only loses the
        // comparison, not this profile.
        let folded = dir.join(FOLDED_FILE);
        if folded.exists() {
            if let Err(e) = fs::rename(&folded, dir.join(PREVIOUS_FOLDED_FILE)) {
                eprintln!(
                    "nativeprof: {benchmark_id}: cannot keep the previous {}: {e}",
                    folded.display()
                );
            }
        }
        let mut ok = true;
        let mut outputs = vec![(FOLDED_FILE, false), (SVG_FILE, false)];
        if self.options.counting() {
            outputs.push((COUNTERS_FILE, true));
        }
        for (name, counters) in outputs {
            let path = dir.join(name);
            let written = if counters {
                p.write_counters(&path)
            } else {
                p.write(&path)
            };
            if let Err(e) = written {
                Self::complain(
                    benchmark_id,
                    &format!("cannot write {}", path.display()),
                    &e,
                );
                ok = false;
            }
        }
        if ok {
            let n = p.samples().unwrap_or_default();
            eprintln!(
                "nativeprof: {benchmark_id}: {} samples ({} lost) -> {}",
                n.samples,
                n.lost,
                dir.join(SVG_FILE).display()
            );
        }
        ok
    }

    /// The libnativeprof profiler, once the first benchmark started it.
    pub fn profiler(&self) -> Option<&Profiler> {
        self.profiler.as_ref()
    }
}

impl Default for BenchmarkProfiler {
    fn default() -> Self {
        Self::new(Options::new())
    }
}
