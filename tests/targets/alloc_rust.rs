// Rust ground truth for the allocation profiler: Vec growth, String building and HashMap
// insertion, each an #[inline(never)] function in `work`, so callchains show
// alloc_rust::work::vec_growth etc. (with the hash suffix under legacy mangling, as a v0 path
// under -C symbol-mangling-version=v0). std's System allocator turns every growth into a libc
// realloc and every table resize into a malloc plus a free, so the counts below are exact.
//
//   vec_growth         100 Vec<u64> of 1,000 pushes: capacity 4, then doubling to 1,024:
//                      1 malloc + 8 realloc each                      900 calls   1,635,200 B
//   string_building    1,000 Strings of 4 x push_str(25 chars): capacity 25, 50, 100:
//                      1 malloc + 2 realloc each                    3,000 calls     175,000 B
//   hashmap_insertion  10 HashMap<u64, u64> of 1,000 inserts: hashbrown tables of 4 to 2,048
//                      buckets (17 B per bucket + 16), each resize a new table
//                      before the old one is freed                    100 calls     697,240 B
//   total 4,000 calls (800 + 2,000 of them realloc), 2,507,440 B requested, nothing leaked; peak
//   52,256 B (the 2,048-bucket table and the 1,024-bucket one it replaces).
//   std's start-up adds 9 calls of its own (2,620 B: pthread_getattr_np reading /proc/self/maps
//   for the main thread's stack guard, and the main thread's info, 544 B of it live at exit).
use std::collections::HashMap;
use std::hint::black_box;

mod work {
    use super::*;

    #[inline(never)]
    pub fn vec_growth() -> u64 {
        let mut total = 0;
        for i in 0..100u64 {
            let mut v = Vec::new();
            for j in 0..1000u64 {
                v.push(i + j);
            }
            total += black_box(&v).len() as u64;
        }
        total
    }

    #[inline(never)]
    pub fn string_building() -> u64 {
        let mut total = 0;
        for i in 0..1000u32 {
            let mut s = String::new();
            for part in 0..4u32 {
                let chunk = [b'a' + ((i + part) % 26) as u8; 25];
                s.push_str(std::str::from_utf8(&chunk).unwrap());
            }
            total += black_box(&s).len() as u64;
        }
        total
    }

    #[inline(never)]
    pub fn hashmap_insertion() -> u64 {
        let mut total = 0;
        for i in 0..10u64 {
            let mut map = HashMap::new();
            for j in 0..1000u64 {
                map.insert(i * 1000 + j, j);
            }
            total += black_box(&map).len() as u64;
        }
        total
    }
}

fn main() {
    let ok = work::vec_growth() == 100_000
        && work::string_building() == 100_000
        && work::hashmap_insertion() == 10_000;
    std::process::exit(if ok { 0 } else { 1 });
}
