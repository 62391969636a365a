// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! A bounded load on culpert-rust-service: REQUESTS requests in total over
//! CONCURRENCY keep-alive connections, /checkout and /search in turn, each
//! checked for 200; then the service's /stats, printed on stdout.  Gives up
//! (exit 1) after --timeout seconds (default 120).
//!
//!   culpert-rust-load ADDR REQUESTS CONCURRENCY [--timeout SECONDS]

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::{body, Body, Client, Uri};

fn usage() -> ! {
    eprintln!("usage: culpert-rust-load ADDR REQUESTS CONCURRENCY [--timeout SECONDS]");
    std::process::exit(2);
}

async fn get(client: &Client<hyper::client::HttpConnector>, uri: Uri) -> Result<Vec<u8>, String> {
    let resp = client
        .get(uri.clone())
        .await
        .map_err(|e| format!("{}: {}", uri, e))?;
    let status = resp.status();
    let bytes = body::to_bytes(resp.into_body())
        .await
        .map_err(|e| format!("{}: {}", uri, e))?;

    if !status.is_success() {
        return Err(format!("{}: {}", uri, status));
    }
    Ok(bytes.to_vec())
}

async fn run(addr: String, requests: u64, concurrency: u64) -> Result<(), String> {
    let client = Client::builder()
        .pool_max_idle_per_host(concurrency as usize)
        .build_http::<Body>();
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let start = Instant::now();

    for _ in 0..concurrency {
        let (client, next, addr) = (client.clone(), next.clone(), addr.clone());

        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Relaxed);
                if i >= requests {
                    return Ok::<(), String>(());
                }
                let path = if i % 2 == 0 { "checkout" } else { "search" };
                let uri: Uri = format!("http://{}/{}", addr, path)
                    .parse()
                    .map_err(|e| format!("{}", e))?;
                get(&client, uri).await?;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "culpert-rust-load: {} requests in {:.2} s ({:.0}/s)",
        requests,
        secs,
        requests as f64 / secs
    );
    let uri: Uri = format!("http://{}/stats", addr)
        .parse()
        .map_err(|e| format!("{}", e))?;
    let stats = get(&client, uri).await?;
    print!("{}", String::from_utf8_lossy(&stats));
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 3 && args.len() != 5 {
        usage();
    }
    let requests: u64 = args[1].parse().unwrap_or_else(|_| usage());
    let concurrency: u64 = args[2].parse().unwrap_or_else(|_| usage());
    let timeout = match args.get(3).map(String::as_str) {
        None => 120,
        Some("--timeout") => args[4].parse().unwrap_or_else(|_| usage()),
        Some(_) => usage(),
    };
    if concurrency == 0 {
        usage();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let res = rt.block_on(async {
        match tokio::time::timeout(
            Duration::from_secs(timeout),
            run(args[0].clone(), requests, concurrency),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(format!("gave up after {} s", timeout)),
        }
    });
    if let Err(e) = res {
        eprintln!("culpert-rust-load: {}", e);
        std::process::exit(1);
    }
}
