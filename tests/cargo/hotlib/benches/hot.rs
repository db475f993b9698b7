//! Two benchmarks whose profiles cannot be confused. Under `--profile-time N` the nativeprof
//! hook writes each one's folded stacks, flame graph and counters into
//! target/criterion/<id>/profile/; a normal run only measures.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use nativeprof::criterion::CriterionProfiler;

fn checksum(c: &mut Criterion) {
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    c.bench_function("hot/checksum", |b| {
        b.iter(|| hotlib::fnv_checksum(black_box(&data), 4))
    });
}

fn collatz(c: &mut Criterion) {
    c.bench_function("hot/collatz", |b| {
        b.iter(|| hotlib::collatz_steps(black_box(2000)))
    });
}

// The default hook unwinds with DWARF CFI: Cargo's release profile has no frame pointers.
criterion_group! {
    name = benches;
    config = Criterion::default().with_profiler(CriterionProfiler::default());
    targets = checksum, collatz
}
criterion_main!(benches);
