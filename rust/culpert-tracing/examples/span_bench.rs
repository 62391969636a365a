// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! The cost of a span enter+exit through the layer, the Rust twin of
//! tests/bench/span_bench.c: LOOPS `span.enter()` + drop pairs on one span
//! (a fixed name, as a request handler has) under the registry with the
//! culpert layer, the same under the registry alone, and LOOPS turns of the
//! loop without a span; ROUNDS rounds of the three, alternated, so drift
//! hits them alike.  Prints "pid N ready", waits for SIGUSR1 (a profiler may
//! attach first), then "ns_per_pair_layer X", "ns_per_pair_plain Y" and
//! "ns_per_empty_turn Z".
//!   span_bench LOOPS [ROUNDS]

use std::ptr::{addr_of_mut, read_volatile, write_volatile};
use std::time::Instant;

use tracing::Dispatch;
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::Registry;

#[path = "../../../tests/targets/ready.rs"]
mod ready;

static mut SINK: u64 = 0;

fn sink(i: u64) {
    // SAFETY: one thread; volatile so that the loop is not folded away
    unsafe { write_volatile(addr_of_mut!(SINK), read_volatile(addr_of_mut!(SINK)) + i) };
}

#[inline(never)]
fn pairs(span: &tracing::Span, loops: u64) -> f64 {
    let t = Instant::now();

    for i in 1..=loops {
        let _entered = span.enter();
        sink(i);
    }
    t.elapsed().as_nanos() as f64
}

#[inline(never)]
fn empty(loops: u64) -> f64 {
    let t = Instant::now();

    for i in 1..=loops {
        sink(i);
    }
    t.elapsed().as_nanos() as f64
}

/// the span of a subscriber: made under it, it keeps that subscriber
fn span_of(d: &Dispatch) -> tracing::Span {
    tracing::dispatcher::with_default(d, || tracing::info_span!("bench_span"))
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let loops = args.first().copied().unwrap_or(0);
    let rounds = args.get(1).copied().unwrap_or(5).max(1);

    if loops == 0 {
        eprintln!("usage: span_bench LOOPS [ROUNDS]");
        std::process::exit(2);
    }
    let layered = span_of(&Dispatch::new(
        Registry::default().with(culpert_tracing::layer()),
    ));
    let plain = span_of(&Dispatch::new(Registry::default()));
    let (mut t_layer, mut t_plain, mut t_empty) = (0.0, 0.0, 0.0);

    let set = ready::ready();
    ready::wait_usr1(&set);
    for _ in 0..rounds {
        t_layer += pairs(&layered, loops);
        t_plain += pairs(&plain, loops);
        t_empty += empty(loops);
    }
    let n = (loops * rounds) as f64;
    println!("ns_per_pair_layer {:.3}", t_layer / n);
    println!("ns_per_pair_plain {:.3}", t_plain / n);
    println!("ns_per_empty_turn {:.3}", t_empty / n);
}
