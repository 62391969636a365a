// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! The Rust twin of tests/targets/span_sem.c.  Enters and exits a span
//! through the layer every 100 ms and prints, each time, the span
//! semaphores as the program sees them and how often the layer looked a
//! span up in the registry (what it does, and only does, to fire the
//! span_enter probe):
//!   "sem ENTER EXIT lookups N"
//! Unprofiled, all three must stay 0: on_enter and on_exit are one load
//! and a branch each.  The registry is wrapped to count the lookups.

use std::any::TypeId;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use tracing_core::span::{Attributes, Current, Id, Record};
use tracing_core::{Event, Interest, LevelFilter, Metadata, Subscriber};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::{LookupSpan, Registry};

static LOOKUPS: AtomicU64 = AtomicU64::new(0);

/// A registry that counts the spans looked up in it
#[derive(Default)]
struct Counting {
    inner: Registry,
}

impl<'a> LookupSpan<'a> for Counting {
    type Data = <Registry as LookupSpan<'a>>::Data;

    fn span_data(&'a self, id: &Id) -> Option<Self::Data> {
        LOOKUPS.fetch_add(1, Relaxed);
        self.inner.span_data(id)
    }
}

impl Subscriber for Counting {
    fn register_callsite(&self, m: &'static Metadata<'static>) -> Interest {
        self.inner.register_callsite(m)
    }
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        self.inner.enabled(m)
    }
    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.inner.max_level_hint()
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        self.inner.new_span(attrs)
    }
    fn record(&self, id: &Id, values: &Record<'_>) {
        self.inner.record(id, values)
    }
    fn record_follows_from(&self, id: &Id, follows: &Id) {
        self.inner.record_follows_from(id, follows)
    }
    fn event(&self, event: &Event<'_>) {
        self.inner.event(event)
    }
    fn enter(&self, id: &Id) {
        self.inner.enter(id)
    }
    fn exit(&self, id: &Id) {
        self.inner.exit(id)
    }
    fn clone_span(&self, id: &Id) -> Id {
        self.inner.clone_span(id)
    }
    fn try_close(&self, id: Id) -> bool {
        self.inner.try_close(id)
    }
    fn current_span(&self) -> Current {
        self.inner.current_span()
    }
    // the layer stack finds the registry through this, to close spans in order
    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            Some(self as *const Self as *const ())
        } else {
            self.inner.downcast_raw(id)
        }
    }
}

fn main() {
    Counting::default().with(culpert_tracing::layer()).init();
    loop {
        tracing::info_span!("tick").in_scope(|| {});
        println!(
            "sem {} {} lookups {}",
            culpert_tracing::probes::span_enter_semaphore(),
            culpert_tracing::probes::span_exit_semaphore(),
            LOOKUPS.load(Relaxed)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
