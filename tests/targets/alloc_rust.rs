// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! Ground truth for a Rust program on the System allocator (glibc's malloc
//! behind std's GlobalAlloc): three functions allocate known totals through
//! Vec, each through another entry point.
//!   small_vecs   Vec::with_capacity of 16 and 64 bytes     -> malloc
//!   zeroed_vecs  vec![0u8; n], n = 1..16 KiB               -> calloc
//!   grown_vecs   128 KiB, reserve_exact to 256 KiB         -> malloc + realloc
//! Each allocates about KIB KiB (default 32768).  Prints "pid N ready",
//! waits for SIGUSR1, runs, prints "total FUNCTION BYTES CALLS" and exits.
//! No crates: libc is declared by hand; builds with Debian's rustc 1.63.
//!   alloc_rust [KIB]

use std::alloc::System;

#[global_allocator]
static GLOBAL: System = System;

#[path = "ready.rs"]
mod ready;

/// keeps allocations from being optimized away (std::hint::black_box needs rustc 1.66)
static SINK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn keep<T>(v: &Vec<T>) {
    SINK.fetch_add(v.as_ptr() as usize, std::sync::atomic::Ordering::Relaxed);
}

struct Total {
    bytes: usize,
    calls: usize,
}

#[inline(never)]
fn small_vecs(kib: usize, t: &mut Total) {
    while t.bytes < kib * 1024 {
        let a: Vec<u8> = Vec::with_capacity(16);
        let b: Vec<u8> = Vec::with_capacity(64);
        keep(&a);
        keep(&b);
        t.bytes += 80;
        t.calls += 2;
    }
}

#[inline(never)]
fn zeroed_vecs(kib: usize, t: &mut Total) {
    let mut i = 0;
    while t.bytes < kib * 1024 {
        let n = 1024 * (1 + i % 16);
        let v = vec![0u8; n];
        keep(&v);
        t.bytes += n;
        t.calls += 1;
        i += 1;
    }
}

#[inline(never)]
fn grown_vecs(kib: usize, t: &mut Total) {
    while t.bytes < kib * 1024 {
        let mut v: Vec<u8> = Vec::with_capacity(128 * 1024);
        keep(&v);
        v.reserve_exact(256 * 1024);
        keep(&v);
        t.bytes += 384 * 1024;
        t.calls += 2;
    }
}

fn main() {
    let kib = std::env::args().nth(1).map_or(32768, |s| s.parse().expect("KIB"));
    let set = ready::ready();
    ready::wait_usr1(&set);
    let mut totals = Vec::with_capacity(3);
    for (name, f) in [
        ("small_vecs", small_vecs as fn(usize, &mut Total)),
        ("zeroed_vecs", zeroed_vecs),
        ("grown_vecs", grown_vecs),
    ] {
        let mut t = Total { bytes: 0, calls: 0 };
        f(kib, &mut t);
        totals.push((name, t));
    }
    for (name, t) in &totals {
        println!("total {} {} {}", name, t.bytes, t.calls);
    }
}
