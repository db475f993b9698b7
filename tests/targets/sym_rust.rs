// Rust test program for the symbolizer: a generic method and closures that stay out-of-line, so
// profiles and symbol tables show demangled Rust paths with generics and closures.
use std::hint::black_box;
use std::time::{Duration, Instant};

pub struct Matrix<T> {
    data: Vec<T>,
}

impl<T: Copy + Into<f64>> Matrix<T> {
    #[inline(never)]
    pub fn sum(&self) -> f64 {
        let mut total = 0.0;
        for _ in 0..50 {
            for v in &self.data {
                total += black_box((*v).into());
            }
        }
        total
    }
}

#[inline(never)]
fn apply<F: Fn(u64) -> u64>(f: F, n: u64) -> u64 {
    let mut acc = 0;
    for i in 0..n {
        acc = black_box(f(acc ^ i));
    }
    acc
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0.2);
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let m = Matrix { data: (0..1000).map(|x| x as f32).collect::<Vec<f32>>() };
    let mut sink = 0.0;
    while Instant::now() < end {
        sink += m.sum();
        let scale = black_box(3u64);
        sink += apply(#[inline(never)] |x| x.wrapping_mul(scale).rotate_left(7), 20000) as f64;
    }
    println!("{}", sink > 0.0);
}
