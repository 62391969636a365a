// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! Every `tracing` span a culpert span.
//!
//! [`layer()`] is a [`tracing_subscriber::Layer`] that fires culpert's USDT
//! span probes (the ones of `include/culpert/span.h`) each time a span is
//! entered and exited, so `culpert-bpf attach` attributes the allocations
//! of a Rust service to the spans it already has (`#[instrument]`,
//! `info_span!`), with no other change to the service:
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//!
//! tracing_subscriber::registry()
//!     .with(culpert_tracing::layer())
//!     .init();
//! ```
//!
//! * `span_id` is the span's `tracing` id, `parent_id` its parent's id (0
//!   for a root span), the name the span's static name: no allocation, no
//!   copy.  The profiler reads the name when the span is entered.
//! * An async span (`#[instrument]` on an `async fn`, `.instrument(span)`)
//!   is entered and exited on every poll, on whichever worker thread polls
//!   it: its allocations go to it on every thread it runs on, and nothing it
//!   does not run is attributed to it while it waits.  Its id stays the same
//!   across polls.  The registry reuses an id once its span has closed.
//! * Unprofiled, `on_enter`/`on_exit` each cost one load of the probe's
//!   USDT semaphore and a branch (see docs/spans.md for figures).
//!
//! The subscriber must be a registry (`LookupSpan`), as with every layer
//! that looks at span names.

#![warn(missing_docs)]

use tracing_core::span::Id;
use tracing_core::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

pub mod probes;

/// The layer that fires culpert's span probes; see [`layer()`].
#[derive(Debug, Default, Clone, Copy)]
pub struct CulpertLayer {
    _private: (),
}

/// A layer that makes every span a culpert span.
pub fn layer() -> CulpertLayer {
    CulpertLayer::default()
}

/// True while a profiler listens to the span probes.
#[inline]
pub fn enabled() -> bool {
    probes::span_enter_semaphore() != 0
}

impl<S> Layer<S> for CulpertLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    #[inline]
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if probes::span_enter_semaphore() != 0 {
            enter_profiled(id, ctx);
        }
    }

    #[inline]
    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        if probes::span_exit_semaphore() != 0 {
            probes::span_exit(id.into_u64());
        }
    }
}

/// Out of line and cold: unprofiled, the branch to here is never taken and
/// the lookups below are never made.
#[cold]
#[inline(never)]
fn enter_profiled<S>(id: &Id, ctx: Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    // a span the registry does not know has no name to give
    let span = match ctx.span(id) {
        Some(span) => span,
        None => return,
    };
    let parent_id = span.parent().map_or(0, |p| p.id().into_u64());

    probes::span_enter(id.into_u64(), parent_id, span.name());
}
