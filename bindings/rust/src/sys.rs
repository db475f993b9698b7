//! Raw FFI declarations of `include/nativeprof/nativeprof.h`, one for one. Prefer the safe
//! [`Profiler`](crate::Profiler); these are for callers that need the C ABI itself.
#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int};

/// `np_status`: a C enum, so an `int`. Kept as an integer (not a Rust enum) because a value this
/// crate does not know must not be undefined behaviour.
pub type np_status = c_int;
pub const NP_OK: np_status = 0;
pub const NP_ERROR_INVALID_ARGUMENT: np_status = 1;
pub const NP_ERROR_PERMISSION_DENIED: np_status = 2;
pub const NP_ERROR_NOT_SUPPORTED: np_status = 3;
pub const NP_ERROR_BAD_STATE: np_status = 4;
pub const NP_ERROR_IO: np_status = 5;
pub const NP_ERROR_RESOURCE_EXHAUSTED: np_status = 6;
pub const NP_ERROR_INTERNAL: np_status = 7;

/// The opaque `np_profiler` (only ever behind a pointer).
#[repr(C)]
pub struct np_profiler {
    _private: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// `np_options`. Initialize with [`np_options_init`], which sets `struct_size`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct np_options {
    pub struct_size: u32,
    pub sample: c_int,
    pub count: c_int,
    pub event: *const c_char,
    pub frequency_hz: u32,
    pub include_kernel: c_int,
    pub dwarf: c_int,
    pub ring_pages: u32,
    pub counter_events: *const c_char,
}

/// `np_counter`: `name` is valid until the profiler is destroyed; `value` is meaningless when
/// `supported` is 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct np_counter {
    pub name: *const c_char,
    pub value: f64,
    pub supported: c_int,
}

extern "C" {
    pub fn np_options_init(options: *mut np_options);
    pub fn np_profiler_create(options: *const np_options, out: *mut *mut np_profiler) -> np_status;
    pub fn np_profiler_start(profiler: *mut np_profiler) -> np_status;
    pub fn np_profiler_stop(profiler: *mut np_profiler) -> np_status;
    pub fn np_profiler_reset(profiler: *mut np_profiler) -> np_status;
    pub fn np_profiler_write_folded(profiler: *mut np_profiler, path: *const c_char) -> np_status;
    pub fn np_profiler_write(profiler: *mut np_profiler, path: *const c_char) -> np_status;
    pub fn np_profiler_write_counters(profiler: *mut np_profiler, path: *const c_char)
        -> np_status;
    pub fn np_profiler_counters(
        profiler: *mut np_profiler,
        out: *mut np_counter,
        capacity: usize,
        count: *mut usize,
    ) -> np_status;
    pub fn np_profiler_samples(
        profiler: *mut np_profiler,
        samples: *mut u64,
        lost: *mut u64,
    ) -> np_status;
    pub fn np_profiler_destroy(profiler: *mut np_profiler);
    pub fn np_last_error() -> *const c_char;
    pub fn np_status_name(status: np_status) -> *const c_char;
}
