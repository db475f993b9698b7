//! `cargo nativeprof --example checksum`: the checksum for about half a second.
use std::time::{Duration, Instant};

fn main() {
    let data = vec![7u8; 65536];
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut sum = 0u64;
    while Instant::now() < deadline {
        sum = sum.wrapping_add(hotlib::fnv_checksum(&data, 4));
    }
    println!("{sum:x}");
}
