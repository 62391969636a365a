// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! An HTTP service on tokio + hyper whose spans are ordinary `tracing`
//! spans (`#[instrument]`ed async handlers, one `info_span!`), made culpert
//! spans by one line: `.with(culpert_tracing::layer())`.
//!
//! Each handler allocates known amounts per request (blocks of 64..1024
//! bytes, sizes drawn from the request's sequence number) and counts every
//! byte it asks for, by span path, so a test has the ground truth.  The
//! handlers await timers and yield between their allocations, so on the
//! multi-threaded runtime their spans are exited and entered again on other
//! worker threads; the handlers count those moves too.  Everything else the
//! process allocates (hyper's connections and buffers, tokio's tasks) is
//! outside any span.
//!
//!   culpert-rust-service [--listen ADDR] [--workers N]
//!
//! The paths are the spans entered on the thread, outermost first; "audit"
//! is made by checkout and entered inside reserve, so its tracing parent
//! (its span_parent_id) is checkout while its path ends in reserve;audit.
//!
//! Prints "listening ADDR" and "pid N ready" once it accepts connections.
//! GET /checkout and GET /search run the handlers; GET /stats answers
//!   "total SPAN_PATH BYTES"    bytes the handlers allocated in that span
//!   "moved SPAN N"             polls of SPAN that resumed on another thread
//!   "requests N"

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use hyper::service::{make_service_fn, service_fn};
use hyper::{Body, Request, Response, Server, StatusCode};
use tracing::instrument;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;

/// The spans that allocate, by span path (outermost first, ';'-joined).
#[derive(Clone, Copy)]
enum Span {
    Request,
    Checkout,
    Price,
    Reserve,
    Search,
    ParseQuery,
    Rank,
    Audit,
}

const N_SPANS: usize = 8;

const SPAN_PATHS: [&str; N_SPANS] = [
    "http_request",
    "http_request;checkout",
    "http_request;checkout;price",
    "http_request;checkout;reserve",
    "http_request;search",
    "http_request;search;parse_query",
    "http_request;search;rank",
    "http_request;checkout;reserve;audit",
];

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: [AtomicU64; N_SPANS] = [ZERO; N_SPANS];
static MOVED: [AtomicU64; N_SPANS] = [ZERO; N_SPANS];
static REQUESTS: AtomicU64 = AtomicU64::new(0);

extern "C" {
    // glibc 2.30+: the kernel's thread id, the profile's thread_id label
    fn gettid() -> i32;
}

fn tid() -> i32 {
    // SAFETY: no arguments, cannot fail
    unsafe { gettid() }
}

/// xorshift64*: the block sizes of a request follow from its sequence number
struct Rng(u64);

impl Rng {
    fn new(seq: u64) -> Self {
        Rng(seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// One block of 64..=1024 bytes, written to and counted: a `Vec<u8>` of
/// capacity n is one malloc(n) from Rust's System allocator.
#[inline(never)]
fn alloc_block(span: Span, rng: &mut Rng) -> Vec<u8> {
    let n = 64 + (rng.next() % 961) as usize;
    let mut v = Vec::<u8>::with_capacity(n);

    // SAFETY: capacity n >= 1; volatile so the allocation is not elided
    unsafe { v.as_mut_ptr().write_volatile(n as u8) };
    ALLOCATED[span as usize].fetch_add(n as u64, Relaxed);
    v
}

/// `count` blocks, each freed before the next is made
fn alloc_blocks(span: Span, rng: &mut Rng, count: usize) {
    for _ in 0..count {
        drop(alloc_block(span, rng));
    }
}

/// `fut` awaited; counted when the poll that finishes it runs on another thread than the one before
async fn await_counted<F: std::future::Future>(span: Span, fut: F) -> F::Output {
    let before = tid();
    let out = fut.await;

    if tid() != before {
        MOVED[span as usize].fetch_add(1, Relaxed);
    }
    out
}

fn tick() -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_micros(500))
}

#[instrument(name = "http_request", skip_all)]
async fn http_request(search: bool, seq: u64) {
    let mut rng = Rng::new(seq);

    alloc_blocks(Span::Request, &mut rng, 8);
    if search {
        search_handler(seq).await;
    } else {
        checkout(seq).await;
    }
    alloc_blocks(Span::Request, &mut rng, 8);
}

#[instrument(skip_all)]
async fn checkout(seq: u64) {
    let mut rng = Rng::new(seq ^ 1);

    alloc_blocks(Span::Checkout, &mut rng, 12);
    price(seq).await;
    // a block held across an await: allocated here, freed on whatever thread resumes
    let held = alloc_block(Span::Checkout, &mut rng);
    await_counted(Span::Checkout, tick()).await;
    drop(held);
    // made here, so its tracing parent is checkout; entered inside reserve
    let audit = tracing::info_span!("audit");
    reserve(seq, audit).await;
    alloc_blocks(Span::Checkout, &mut rng, 4);
}

#[instrument(skip_all)]
async fn price(seq: u64) {
    let mut rng = Rng::new(seq ^ 2);

    for _ in 0..4 {
        alloc_blocks(Span::Price, &mut rng, 6);
        await_counted(Span::Price, tokio::task::yield_now()).await;
    }
}

#[instrument(skip_all)]
async fn reserve(seq: u64, audit: tracing::Span) {
    let mut rng = Rng::new(seq ^ 3);

    alloc_blocks(Span::Reserve, &mut rng, 12);
    await_counted(Span::Reserve, tick()).await;
    alloc_blocks(Span::Reserve, &mut rng, 12);
    audit.in_scope(|| alloc_blocks(Span::Audit, &mut rng, 16));
}

#[instrument(name = "search", skip_all)]
async fn search_handler(seq: u64) {
    let mut rng = Rng::new(seq ^ 4);

    alloc_blocks(Span::Search, &mut rng, 8);
    parse_query(seq).await;
    // a synchronous span inside the async one
    tracing::info_span!("rank").in_scope(|| alloc_blocks(Span::Rank, &mut rng, 24));
    await_counted(Span::Search, tick()).await;
    alloc_blocks(Span::Search, &mut rng, 8);
}

#[instrument(skip_all)]
async fn parse_query(seq: u64) {
    let mut rng = Rng::new(seq ^ 5);

    alloc_blocks(Span::ParseQuery, &mut rng, 12);
    await_counted(Span::ParseQuery, tick()).await;
    alloc_blocks(Span::ParseQuery, &mut rng, 12);
}

fn stats() -> String {
    let mut s = String::new();

    for (i, path) in SPAN_PATHS.iter().enumerate() {
        s += &format!("total {} {}\n", path, ALLOCATED[i].load(Relaxed));
    }
    for span in [
        Span::Checkout,
        Span::Price,
        Span::Reserve,
        Span::Search,
        Span::ParseQuery,
    ] {
        let path = SPAN_PATHS[span as usize];
        let name = path.rsplit(';').next().unwrap_or(path);
        s += &format!("moved {} {}\n", name, MOVED[span as usize].load(Relaxed));
    }
    s += &format!("requests {}\n", REQUESTS.load(Relaxed));
    s
}

/// Not instrumented: what it allocates (the response) is outside any span
async fn route(req: Request<Body>) -> Result<Response<Body>, Infallible> {
    let search = match req.uri().path() {
        "/checkout" => false,
        "/search" => true,
        "/stats" => return Ok(Response::new(Body::from(stats()))),
        _ => {
            let mut resp = Response::new(Body::from("not found\n"));
            *resp.status_mut() = StatusCode::NOT_FOUND;
            return Ok(resp);
        }
    };
    let seq = REQUESTS.fetch_add(1, Relaxed);

    http_request(search, seq).await;
    Ok(Response::new(Body::from("ok\n")))
}

fn usage() -> ! {
    eprintln!("usage: culpert-rust-service [--listen ADDR] [--workers N]");
    std::process::exit(2);
}

fn main() {
    let mut listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    let mut workers = 4;
    let mut args = std::env::args().skip(1);

    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--listen" => listen = v.parse().unwrap_or_else(|_| usage()),
            "--workers" => workers = v.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }

    // The one line that makes every span a culpert span is the second.  The
    // level filter is what a service usually has: without it hyper's own
    // trace-level spans (parse_headers, encode_headers) would be culpert
    // spans too.
    tracing_subscriber::registry()
        .with(LevelFilter::INFO)
        .with(culpert_tracing::layer())
        .init();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let make_svc = make_service_fn(|_conn| async { Ok::<_, Infallible>(service_fn(route)) });
        let server = Server::bind(&listen).serve(make_svc);

        println!("listening {}", server.local_addr());
        println!("pid {} ready", std::process::id());
        if let Err(e) = server.await {
            eprintln!("culpert-rust-service: {}", e);
            std::process::exit(1);
        }
    });
}
