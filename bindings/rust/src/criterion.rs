//! The Criterion hook (feature `criterion`): `cargo bench -- --profile-time N` then writes, per
//! benchmark, [`FOLDED_FILE`](crate::FOLDED_FILE), [`SVG_FILE`](crate::SVG_FILE) and
//! [`COUNTERS_FILE`](crate::COUNTERS_FILE) into the directory Criterion names,
//! `target/criterion/<benchmark id>/profile/`, holding that benchmark's iterations only.
//!
//! ```ignore
//! use criterion::{criterion_group, criterion_main, Criterion};
//! use nativeprof::criterion::CriterionProfiler;
//!
//! criterion_group! {
//!     name = benches;
//!     config = Criterion::default().with_profiler(CriterionProfiler::default());
//!     targets = bench_a, bench_b
//! }
//! criterion_main!(benches);
//! ```
//!
//! Criterion calls a profiler only under `--profile-time`; a normal `cargo bench` measures as
//! usual and never creates the libnativeprof profiler. The trait is the same from Criterion 0.3
//! to 0.7; the suite tests 0.3.6.
use std::path::Path;

use crate::{BenchmarkProfiler, Options};

/// `criterion::profiler::Profiler` over [`BenchmarkProfiler`]: `start_profiling` resets and
/// starts, `stop_profiling` stops and writes the files. Failures are one line on stderr; it
/// never panics inside Criterion.
#[derive(Debug)]
pub struct CriterionProfiler {
    inner: BenchmarkProfiler,
}

/// DWARF unwinding: Cargo's profiles build without frame pointers, so a frame-pointer walk would
/// stop at the leaf.
impl Default for CriterionProfiler {
    fn default() -> Self {
        CriterionProfiler::new(Options::new().dwarf(true))
    }
}

impl CriterionProfiler {
    /// With these profiler options (the default is `Options::new().dwarf(true)`; e.g.
    /// `Options::new().frequency_hz(1999).dwarf(true)`).
    pub fn new(options: Options) -> Self {
        CriterionProfiler {
            inner: BenchmarkProfiler::new(options),
        }
    }

    pub fn benchmark_profiler(&self) -> &BenchmarkProfiler {
        &self.inner
    }
}

impl ::criterion::profiler::Profiler for CriterionProfiler {
    fn start_profiling(&mut self, benchmark_id: &str, _benchmark_dir: &Path) {
        self.inner.start(benchmark_id);
    }

    fn stop_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
        self.inner.stop(benchmark_id, benchmark_dir);
    }
}
