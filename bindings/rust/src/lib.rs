//! Safe Rust bindings to libnativeprof: profile the calling process from inside it.
//!
//! A [`Profiler`] samples every thread of the process (threads created later included) between
//! [`Profiler::start`] and [`Profiler::stop`], from a reader thread of its own, and writes the
//! stacks as folded text, an SVG flame graph, pprof or speedscope ([`Profiler::write`] picks the
//! format from the file name) plus the counter table ([`Profiler::write_counters`]). Samples and
//! counters accumulate across start/stop pairs until [`Profiler::reset`]. One profiler runs at a
//! time per process (a second `start` fails with [`ErrorKind::BadState`]).
//!
//! ```no_run
//! let mut p = nativeprof::Profiler::new(&nativeprof::Options::new().frequency_hz(999))?;
//! p.start()?;
//! // ... the code to profile ...
//! p.stop()?;
//! p.write("region.svg")?;
//! p.write_counters("region.counters.txt")?;
//! # Ok::<(), nativeprof::Error>(())
//! ```
//!
//! With the `criterion` feature, [`criterion::CriterionProfiler`] hooks the profiler into
//! Criterion's `--profile-time`. [`BenchmarkProfiler`] is the same per-benchmark logic for any
//! other harness. The crate does not symbolize or unwind itself: libnativeprof does, in C++;
//! `build.rs` says how the library is found.

mod bench;
#[cfg(feature = "criterion")]
pub mod criterion;
mod error;
pub mod sys;

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};

pub use bench::{BenchmarkProfiler, COUNTERS_FILE, FOLDED_FILE, PREVIOUS_FOLDED_FILE, SVG_FILE};
pub use error::{Error, ErrorKind, Result};

/// Profiler options. Every field left unset keeps libnativeprof's default (from
/// `np_options_init`): sampling and counting on, `cpu-clock` at 999 Hz, frame-pointer unwinding,
/// kernel stacks when permitted, automatic ring size, the library's default counter list.
#[derive(Debug, Clone, Default)]
pub struct Options {
    sample: Option<bool>,
    count: Option<bool>,
    event: Option<String>,
    frequency_hz: Option<u32>,
    include_kernel: Option<bool>,
    dwarf: Option<bool>,
    ring_pages: Option<u32>,
    counter_events: Option<String>,
}

impl Options {
    /// The library's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Collect stacks.
    pub fn sample(mut self, on: bool) -> Self {
        self.sample = Some(on);
        self
    }
    /// Count the counter events.
    pub fn count(mut self, on: bool) -> Self {
        self.count = Some(on);
        self
    }
    /// Sampling event, a perf name (`"cpu-clock"`, `"cycles"`, ...).
    pub fn event(mut self, name: impl Into<String>) -> Self {
        self.event = Some(name.into());
        self
    }
    /// Samples per second per thread.
    pub fn frequency_hz(mut self, hz: u32) -> Self {
        self.frequency_hz = Some(hz);
        self
    }
    /// Kernel stacks too, when `perf_event_paranoid` permits (else user-only, silently).
    pub fn include_kernel(mut self, on: bool) -> Self {
        self.include_kernel = Some(on);
        self
    }
    /// DWARF unwinding (no frame pointers needed, costlier per sample) instead of frame
    /// pointers. Rust code built without `-C force-frame-pointers=yes` unwinds fully only so.
    pub fn dwarf(mut self, on: bool) -> Self {
        self.dwarf = Some(on);
        self
    }
    /// Data pages per CPU ring, a power of two; 0: automatic.
    pub fn ring_pages(mut self, pages: u32) -> Self {
        self.ring_pages = Some(pages);
        self
    }
    /// Comma-separated perf event names to count instead of the default list.
    pub fn counter_events(mut self, names: impl Into<String>) -> Self {
        self.counter_events = Some(names.into());
        self
    }
    /// Whether counting ends up on (it is by default).
    pub fn counting(&self) -> bool {
        self.count != Some(false)
    }
}

/// One counter total. `value` is `None` when the kernel cannot count the event here (never a
/// made-up 0); task-clock is in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    pub name: String,
    pub value: Option<f64>,
}

/// Samples collected since the last reset, and samples the kernel dropped (ring full).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleCount {
    pub samples: u64,
    pub lost: u64,
}

/// An in-process profiler (`np_profiler`). Destroyed (stopped first if running) on drop.
///
/// `Send`: libnativeprof does not tie a profiler to the thread that created it. `Sync`: the C
/// API serializes the calls on one profiler internally and the error message is per thread, so
/// the `&self` methods (writing and reading results) may run from several threads at once.
/// Starting, stopping and resetting take `&mut self`, so safe code cannot change the state
/// while another thread writes; the C API would report that race as `BadState`, not crash.
#[derive(Debug)]
pub struct Profiler {
    raw: NonNull<sys::np_profiler>,
}

// SAFETY: see the type's documentation; every C call on one np_profiler takes its mutex.
unsafe impl Send for Profiler {}
// SAFETY: as above; np_counter names are copied into Strings before the call returns.
unsafe impl Sync for Profiler {}

fn check(status: sys::np_status) -> Result<()> {
    if status == sys::NP_OK {
        Ok(())
    } else {
        Err(Error::from_last_error(status))
    }
}

fn path_cstring(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("path {path:?} contains a NUL byte"),
        )
    })
}

fn str_cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} {s:?} contains a NUL byte"),
        )
    })
}

impl Profiler {
    /// Creates a profiler; nothing is opened until [`start`](Self::start).
    /// Errors: `InvalidArgument` (unknown event name, bad frequency, nothing enabled).
    pub fn new(options: &Options) -> Result<Self> {
        let mut o = std::mem::MaybeUninit::<sys::np_options>::zeroed();
        // SAFETY: np_options_init writes sizeof(np_options) bytes, which this struct mirrors
        // (the crate's tests compare struct_size with size_of).
        let mut o = unsafe {
            sys::np_options_init(o.as_mut_ptr());
            o.assume_init()
        };
        let flag = |b: bool| b as c_int;
        if let Some(v) = options.sample {
            o.sample = flag(v);
        }
        if let Some(v) = options.count {
            o.count = flag(v);
        }
        if let Some(v) = options.frequency_hz {
            o.frequency_hz = v;
        }
        if let Some(v) = options.include_kernel {
            o.include_kernel = flag(v);
        }
        if let Some(v) = options.dwarf {
            o.dwarf = flag(v);
        }
        if let Some(v) = options.ring_pages {
            o.ring_pages = v;
        }
        // Both strings live until np_profiler_create returned (it copies what it keeps).
        let event = options
            .event
            .as_deref()
            .map(|e| str_cstring("event", e))
            .transpose()?;
        let counters = options
            .counter_events
            .as_deref()
            .map(|e| str_cstring("counter_events", e))
            .transpose()?;
        o.event = event.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        o.counter_events = counters.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        let mut raw = ptr::null_mut();
        // SAFETY: `o` is initialized; `raw` is a valid out pointer.
        check(unsafe { sys::np_profiler_create(&o, &mut raw) })?;
        NonNull::new(raw)
            .map(|raw| Profiler { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "np_profiler_create returned NULL"))
    }

    /// A profiler with the library's defaults.
    pub fn with_defaults() -> Result<Self> {
        Self::new(&Options::new())
    }

    /// Starts sampling/counting every thread of the process. Errors: `BadState` if this or
    /// another profiler of the process is running; `PermissionDenied` (perf_event_paranoid; the
    /// message says what to do); `NotSupported` (event unavailable); `ResourceExhausted` (fds).
    pub fn start(&mut self) -> Result<()> {
        // SAFETY: self.raw is a live profiler until drop.
        check(unsafe { sys::np_profiler_start(self.raw.as_ptr()) })
    }

    /// Stops, drains the last samples and closes every perf fd. Errors: `BadState` if not
    /// running.
    pub fn stop(&mut self) -> Result<()> {
        // SAFETY: as in start.
        check(unsafe { sys::np_profiler_stop(self.raw.as_ptr()) })
    }

    /// Drops the samples and counter totals collected so far. Errors: `BadState` while running.
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: as in start.
        check(unsafe { sys::np_profiler_reset(self.raw.as_ptr()) })
    }

    /// Writes the samples since the last reset, atomically, in the format the name selects (as
    /// `nativeprof record -o`): `.svg` flame graph, `.pb.gz`/`.pprof`/`.pb` pprof,
    /// `.speedscope.json`, anything else folded stacks. Errors: `BadState` while running or when
    /// sampling is off; `Io` when the file cannot be written.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_cstring(path.as_ref())?;
        // SAFETY: as in start; `path` is NUL-terminated.
        check(unsafe { sys::np_profiler_write(self.raw.as_ptr(), path.as_ptr()) })
    }

    /// [`write`](Self::write), always as folded stacks whatever the name.
    pub fn write_folded(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_cstring(path.as_ref())?;
        // SAFETY: as in write.
        check(unsafe { sys::np_profiler_write_folded(self.raw.as_ptr(), path.as_ptr()) })
    }

    /// Writes the counter totals as the table `nativeprof record` prints ("<not supported>"
    /// for events this machine cannot count), atomically. Errors: `BadState` while running or
    /// when counting is off; `Io` when the file cannot be written.
    pub fn write_counters(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_cstring(path.as_ref())?;
        // SAFETY: as in write.
        check(unsafe { sys::np_profiler_write_counters(self.raw.as_ptr(), path.as_ptr()) })
    }

    /// Counter totals since the last reset, in the order of the counter events. Errors:
    /// `BadState` while running or when counting is off.
    pub fn counters(&self) -> Result<Vec<Counter>> {
        let mut count = 0usize;
        // SAFETY: capacity 0 with a NULL array only asks for the count.
        check(unsafe {
            sys::np_profiler_counters(self.raw.as_ptr(), ptr::null_mut(), 0, &mut count)
        })?;
        let empty = sys::np_counter {
            name: ptr::null(),
            value: 0.0,
            supported: 0,
        };
        let mut raw = vec![empty; count];
        // SAFETY: `raw` has room for `raw.len()` counters.
        check(unsafe {
            sys::np_profiler_counters(self.raw.as_ptr(), raw.as_mut_ptr(), raw.len(), &mut count)
        })?;
        raw.truncate(count);
        Ok(raw
            .iter()
            .map(|c| Counter {
                name: if c.name.is_null() {
                    String::new()
                } else {
                    // SAFETY: the library keeps the name alive until destroy; copied here.
                    unsafe { CStr::from_ptr(c.name) }
                        .to_string_lossy()
                        .into_owned()
                },
                value: (c.supported != 0).then_some(c.value),
            })
            .collect())
    }

    /// The counter named `name`, when it was requested and is supported here.
    pub fn counter(&self, name: &str) -> Result<Option<f64>> {
        Ok(self
            .counters()?
            .into_iter()
            .find(|c| c.name == name)
            .and_then(|c| c.value))
    }

    /// Samples since the last reset. Errors: `BadState` while running.
    pub fn samples(&self) -> Result<SampleCount> {
        let mut n = SampleCount::default();
        // SAFETY: both out pointers are valid.
        check(unsafe { sys::np_profiler_samples(self.raw.as_ptr(), &mut n.samples, &mut n.lost) })?;
        Ok(n)
    }

    /// The C handle, for calls this crate does not wrap. Valid while `self` lives.
    pub fn as_raw(&self) -> *mut sys::np_profiler {
        self.raw.as_ptr()
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        // SAFETY: created by np_profiler_create, destroyed exactly once.
        unsafe { sys::np_profiler_destroy(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests;
