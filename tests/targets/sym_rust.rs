// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! Ground truth for symbolization of Rust, built with both symbol manglings
//! (sym_rust_legacy, sym_rust_v0): an allocation reached through a method and
//! a generic function both inlined into `restock`, so its location has three
//! frames, innermost first, at the lines marked @reserve, @stock, @restock.
//! Prints "pid N ready", waits for SIGUSR1, allocates, prints "done", and
//! waits for SIGUSR1 again.  No crates: libc is declared by hand; builds with
//! Debian's rustc 1.63 as with newer ones.

#[path = "ready.rs"]
mod ready;

extern "C" {
    fn malloc(n: usize) -> *mut u8;
    fn free(p: *mut u8);
}

/// keeps allocations from being optimized away (std::hint::black_box needs rustc 1.66)
static SINK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn keep(v: usize) {
    SINK.fetch_add(v, std::sync::atomic::Ordering::Relaxed);
}

mod warehouse {
    pub struct Shelf {
        pub slots: usize,
    }

    impl Shelf {
        #[inline(always)]
        pub fn reserve(&self, n: usize) -> *mut u8 {
            unsafe { super::malloc(n * self.slots) } // @reserve
        }
    }

    #[inline(always)]
    pub fn stock<T: Copy>(shelf: &Shelf, n: usize, _item: T) -> *mut u8 {
        shelf.reserve(n + std::mem::size_of::<T>()) // @stock
    }

    #[inline(never)]
    pub fn restock(rounds: usize) {
        let shelf = Shelf { slots: 8 };
        for i in 0..rounds {
            let p = stock(&shelf, 100 + i, 7u32); // @restock
            super::keep(p as usize);
            unsafe { super::free(p) };
        }
    }

    #[inline(never)]
    pub fn fill_boxes(rounds: usize) {
        for i in 0..rounds {
            let v: Vec<u64> = Vec::with_capacity(64 + i);
            super::keep(v.as_ptr() as usize);
        }
    }
}

fn main() {
    let set = ready::ready();
    ready::wait_usr1(&set);
    warehouse::restock(100);
    warehouse::fill_boxes(50);
    println!("done");
    ready::wait_usr1(&set);
}
