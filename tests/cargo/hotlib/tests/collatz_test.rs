//! An integration test that spends about a second in `collatz_steps`, so `cargo nativeprof
//! --test collatz_test` has something to show.
use std::time::{Duration, Instant};

#[test]
fn collatz_totals_are_stable() {
    let deadline = Instant::now() + Duration::from_millis(1000);
    while Instant::now() < deadline {
        assert_eq!(hotlib::collatz_steps(3000), 215_063);
    }
}
