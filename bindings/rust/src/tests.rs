//! Against the real libnativeprof: the options layout matches the C header, errors carry the
//! status kind and the library's message, a region profile names the function that burned the
//! CPU in every format, and BenchmarkProfiler gives each benchmark its own files.
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::*;

// One running profiler per process, and the test harness runs tests on parallel threads.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serialize() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nativeprof-rs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

/// CPU time of the calling thread: the burners below run for CPU time, not wall time, so a busy
/// machine makes them slower but not shorter.
fn thread_cpu_time() -> Duration {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer; CLOCK_THREAD_CPUTIME_ID exists on every Linux.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

// xorshift with no calls in its loop even at opt-level 0, so the sampled IP is in here whether
// or not the test build has frame pointers.
#[inline(never)]
fn burn_alpha_in_rust(duration: Duration) -> u64 {
    let deadline = thread_cpu_time() + duration;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    loop {
        let mut i = 0u32;
        while i < 200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            i += 1;
        }
        if thread_cpu_time() >= deadline {
            return std::hint::black_box(x);
        }
    }
}

#[inline(never)]
fn burn_beta_in_rust(duration: Duration) -> u64 {
    let deadline = thread_cpu_time() + duration;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    loop {
        let mut i = 0u32;
        while i < 200_000 {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            i += 1;
        }
        if thread_cpu_time() >= deadline {
            return std::hint::black_box(x);
        }
    }
}

/// Starts `p`, or says why this machine cannot and returns false (perf_event_paranoid > 2,
/// no perf_event_open in a container).
fn start_or_skip(p: &mut Profiler) -> bool {
    match p.start() {
        Ok(()) => true,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            eprintln!("skipped: perf events are not permitted here: {e}");
            false
        }
        Err(e) => panic!("start: {e}"),
    }
}

#[test]
fn options_match_the_c_layout() {
    // np_options_init writes the C struct's size into a buffer larger than any version of it.
    #[repr(C, align(8))]
    struct Buffer([u8; 512]);
    let mut buffer = Buffer([0; 512]);
    unsafe { sys::np_options_init(buffer.0.as_mut_ptr().cast()) };
    let struct_size = u32::from_ne_bytes(buffer.0[..4].try_into().unwrap());
    assert_eq!(struct_size as usize, std::mem::size_of::<sys::np_options>());
    let name = unsafe { std::ffi::CStr::from_ptr(sys::np_status_name(sys::NP_ERROR_BAD_STATE)) };
    assert_eq!(name.to_str().unwrap(), "NP_ERROR_BAD_STATE");
}

#[test]
fn errors_carry_the_kind_and_the_library_message() {
    let e = Profiler::new(&Options::new().event("no-such-event")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("no-such-event"), "{e}");
    assert!(e.to_string().starts_with("invalid argument: "), "{e}");

    let e = Profiler::new(&Options::new().sample(false).count(false)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(!e.message().is_empty());

    let e = Profiler::new(&Options::new().event("cpu\0clock")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = Profiler::new(&Options::new().ring_pages(3)).unwrap_err();
    assert!(e.message().contains("power of two"), "{e}");
}

#[test]
fn profiler_is_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Profiler>();
}

#[test]
fn enforces_states() {
    let _one = serialize();
    let dir = temp_dir("states");
    let mut p = Profiler::with_defaults().unwrap();
    assert_eq!(p.stop().unwrap_err().kind(), ErrorKind::BadState);
    if !start_or_skip(&mut p) {
        return;
    }
    let again = p.start().unwrap_err();
    assert_eq!(again.kind(), ErrorKind::BadState);
    assert!(again.message().contains("already running"), "{again}");
    assert_eq!(
        p.write(dir.join("x.svg")).unwrap_err().kind(),
        ErrorKind::BadState
    );
    assert_eq!(p.counters().unwrap_err().kind(), ErrorKind::BadState);
    assert_eq!(p.reset().unwrap_err().kind(), ErrorKind::BadState);
    // A second profiler of the process cannot start while this one runs.
    let mut other = Profiler::with_defaults().unwrap();
    assert_eq!(other.start().unwrap_err().kind(), ErrorKind::BadState);
    p.stop().unwrap();
    assert_eq!(
        p.write("/nonexistent-dir/x.folded").unwrap_err().kind(),
        ErrorKind::Io
    );
    assert_eq!(
        p.write_counters("/nonexistent-dir/c.txt")
            .unwrap_err()
            .kind(),
        ErrorKind::Io
    );
    // Dropping a running profiler stops it: the next one can start.
    p.start().unwrap();
    drop(p);
    other.start().unwrap();
    other.stop().unwrap();
}

#[test]
fn region_profile_names_the_burning_function_in_every_format() {
    let _one = serialize();
    let dir = temp_dir("region");
    let mut p = Profiler::new(&Options::new().frequency_hz(999)).unwrap();
    if !start_or_skip(&mut p) {
        return;
    }
    burn_alpha_in_rust(Duration::from_millis(400));
    p.stop().unwrap();

    let n = p.samples().unwrap();
    assert!(n.samples > 20, "{n:?}");
    p.write_folded(dir.join("region.txt")).unwrap();
    p.write(dir.join("region.folded")).unwrap();
    p.write(dir.join("region.svg")).unwrap();
    p.write_counters(dir.join("counters.txt")).unwrap();
    for name in ["region.txt", "region.folded"] {
        assert!(
            read(&dir.join(name)).contains("burn_alpha_in_rust"),
            "{name}"
        );
    }
    let svg = read(&dir.join("region.svg"));
    assert!(svg.contains("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.contains("burn_alpha_in_rust"));

    let table = read(&dir.join("counters.txt"));
    assert!(table.contains("task-clock"), "{table}");
    let counters = p.counters().unwrap();
    let task_clock = counters
        .iter()
        .find(|c| c.name == "task-clock")
        .expect("task-clock");
    // The region burns 400 ms of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID); task-clock,
    // enabled and disabled around it, has been seen 30 us short of that on a busy machine.
    assert!(task_clock.value.unwrap() >= 0.38e9, "{task_clock:?}");
    for c in counters.iter().filter(|c| c.value.is_none()) {
        assert!(
            table
                .lines()
                .any(|l| l.contains(&c.name) && l.contains("not supported")),
            "{} is unsupported but the table does not say so:\n{table}",
            c.name
        );
    }
    assert_eq!(p.counter("task-clock").unwrap(), task_clock.value);

    p.reset().unwrap();
    assert_eq!(p.samples().unwrap().samples, 0);
}

#[test]
fn benchmark_profiler_gives_each_benchmark_its_own_files() {
    let _one = serialize();
    let root = temp_dir("bench");
    let mut b = BenchmarkProfiler::new(Options::new());
    {
        // Probe: without perf access BenchmarkProfiler only prints, so skip like the others.
        let mut probe = Profiler::with_defaults().unwrap();
        if !start_or_skip(&mut probe) {
            return;
        }
        probe.stop().unwrap();
    }
    let alpha = root.join("g/alpha/profile");
    b.start("g/alpha");
    burn_alpha_in_rust(Duration::from_millis(300));
    assert!(b.stop("g/alpha", &alpha));
    let beta = root.join("g/beta/profile");
    b.start("g/beta");
    burn_beta_in_rust(Duration::from_millis(300));
    assert!(b.stop("g/beta", &beta));

    for (dir, mine, other) in [
        (&alpha, "burn_alpha_in_rust", "burn_beta_in_rust"),
        (&beta, "burn_beta_in_rust", "burn_alpha_in_rust"),
    ] {
        let folded = read(&dir.join(FOLDED_FILE));
        assert!(folded.contains(mine), "{}", dir.display());
        assert!(!folded.contains(other), "{} has {other}", dir.display());
        assert!(read(&dir.join(SVG_FILE)).contains(mine));
        assert!(read(&dir.join(COUNTERS_FILE)).contains("task-clock"));
    }

    // A directory that cannot be created: reported, no panic, and the next benchmark works.
    b.start("g/bad");
    assert!(!b.stop("g/bad", Path::new("/proc/nativeprof-cannot/profile")));
    // Stopping what never started is a no-op.
    assert!(!b.stop("g/never", &root.join("never")));
    assert!(!root.join("never").exists());
    b.start("g/again");
    assert!(b.stop("g/again", &root.join("again")));
    assert!(root.join("again").join(SVG_FILE).exists());
}

#[test]
fn benchmark_profiler_without_counting_writes_no_counter_table() {
    let _one = serialize();
    let root = temp_dir("nocount");
    let mut b = BenchmarkProfiler::new(Options::new().count(false));
    b.start("x");
    burn_alpha_in_rust(Duration::from_millis(50));
    if b.stop("x", &root) {
        assert!(root.join(FOLDED_FILE).exists());
        assert!(!root.join(COUNTERS_FILE).exists());
    }
}
