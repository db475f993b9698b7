//! Runs the checksum for about the number of seconds given (default 1), then prints it so the
//! work cannot be optimised away. An exit status of 3 when asked (`--fail`) tests propagation.
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--fail") {
        std::process::exit(3);
    }
    let seconds: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let data: Vec<u8> = (0..65536u32).map(|i| (i * 13) as u8).collect();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut sum = 0u64;
    while Instant::now() < deadline {
        sum = sum.wrapping_add(hotlib::fnv_checksum(&data, 8));
    }
    println!("{sum:x}");
}
