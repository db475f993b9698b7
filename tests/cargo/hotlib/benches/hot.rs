use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn checksum(c: &mut Criterion) {
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    c.bench_function("hot/checksum", |b| b.iter(|| hotlib::fnv_checksum(black_box(&data), 4)));
}

fn collatz(c: &mut Criterion) {
    c.bench_function("hot/collatz", |b| b.iter(|| hotlib::collatz_steps(black_box(2000))));
}

criterion_group!(benches, checksum, collatz);
criterion_main!(benches);
