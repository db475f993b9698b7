//! Two CPU-bound functions whose profiles cannot be confused: one hashes bytes with integer
//! multiplies, the other walks Collatz sequences with a data-dependent branch.

/// FNV-1a over `data`, `rounds` times.
#[inline(never)]
pub fn fnv_checksum(data: &[u8], rounds: u32) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..rounds {
        for &byte in data {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// Total Collatz steps of every number in `1..=limit`.
#[inline(never)]
pub fn collatz_steps(limit: u64) -> u64 {
    let mut total = 0u64;
    for start in 1..=limit {
        let mut n = start;
        while n != 1 {
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            total += 1;
        }
    }
    total
}
