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

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes HOTLIB_UNIT_ROUNDS times (default 10: quick under `cargo test`);
    /// `cargo nativeprof --lib` profiles it with many more.
    #[test]
    fn checksum_is_stable() {
        let rounds = std::env::var("HOTLIB_UNIT_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(10);
        let data: Vec<u8> = (0..65536u32).map(|i| (i * 7) as u8).collect();
        let first = fnv_checksum(std::hint::black_box(&data), rounds);
        assert_eq!(first, fnv_checksum(std::hint::black_box(&data), rounds));
    }
}
