// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! The cost of a span enter+exit through the layer, the Rust twin of
//! tests/bench/span_bench.c: LOOPS `span.enter()` + drop pairs on one span
//! (a fixed name, as a request handler has) under the registry with the
//! culpert layer, under the registry with a layer that does nothing (what
//! tracing-subscriber's layering costs by itself), under the registry
//! alone, and LOOPS turns of the loop without a span.  ROUNDS rounds of the
//! four, alternated; each figure is the fastest of its rounds: on a shared
//! machine the slower rounds measure the neighbours.  Prints "pid N ready",
//! waits for SIGUSR1 (a profiler may attach first), then, in ns per turn,
//!   ns_per_pair_layer X
//!   ns_per_pair_plain Y
//!   ns_per_pair_empty_layer Z
//!   ns_per_empty_turn W
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

/// LOOPS pairs on a span of `d`, with `d` the default subscriber as in a
/// service (the registry closes spans through the default one)
#[inline(never)]
fn pairs(d: &Dispatch, span: &tracing::Span, loops: u64) -> f64 {
    tracing::dispatcher::with_default(d, || {
        let t = Instant::now();

        for i in 1..=loops {
            let _entered = span.enter();
            sink(i);
        }
        t.elapsed().as_nanos() as f64
    })
}

#[inline(never)]
fn empty(loops: u64) -> f64 {
    let t = Instant::now();

    for i in 1..=loops {
        sink(i);
    }
    t.elapsed().as_nanos() as f64
}

/// a layer that does nothing: what layering itself costs
struct Empty;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Empty {}

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
    let d_layered = Dispatch::new(Registry::default().with(culpert_tracing::layer()));
    let d_empty = Dispatch::new(Registry::default().with(Empty));
    let d_plain = Dispatch::new(Registry::default());
    let (layered, empty_layer, plain) = (span_of(&d_layered), span_of(&d_empty), span_of(&d_plain));
    let (mut t_layer, mut t_plain, mut t_empty) = (f64::MAX, f64::MAX, f64::MAX);
    let mut t_empty_layer = f64::MAX;

    let set = ready::ready();
    ready::wait_usr1(&set);
    for _ in 0..rounds {
        t_empty_layer = t_empty_layer.min(pairs(&d_empty, &empty_layer, loops));
        t_layer = t_layer.min(pairs(&d_layered, &layered, loops));
        t_plain = t_plain.min(pairs(&d_plain, &plain, loops));
        t_empty = t_empty.min(empty(loops));
    }
    let n = loops as f64;
    println!("ns_per_pair_layer {:.3}", t_layer / n);
    println!("ns_per_pair_plain {:.3}", t_plain / n);
    println!("ns_per_pair_empty_layer {:.3}", t_empty_layer / n);
    println!("ns_per_empty_turn {:.3}", t_empty / n);
}
