// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! The two USDT probe sites of `include/culpert/span.h`, written out by hand:
//!
//! ```text
//! culpert:span_enter(u64 span_id, u64 parent_id, const char *name, u64 name_len)
//! culpert:span_exit(u64 span_id)
//! ```
//!
//! Each site is a `nop` with a `.note.stapsdt` note (what `<sys/sdt.h>`
//! emits: pc, the `.stapsdt.base` address, the semaphore's address,
//! "culpert", the probe's name and its argument specs), and a semaphore in
//! `.probes` that the kernel increments while a profiler is attached.  The
//! note is the ABI culpert-bpf reads; the arguments are `8@REG` (unsigned
//! 64-bit in a register), which libbpf's USDT argument parser takes on
//! x86-64 (`8@%rdi`) and aarch64 (`8@x0`).  Only `core` is used, so the
//! module also builds for a target without `std` (the aarch64 check).
//!
//! The sites are two functions that are never inlined: a program carries one
//! site per probe whatever the number of instantiations of the layer, and the
//! callers pay the call only while a profiler listens.

use core::arch::asm;
use core::ptr::{addr_of, read_volatile};

// The names of span.h's semaphores: a C object of the same program that
// includes span.h defines them weak, so both kinds of sites share these.
// Written only by the kernel (uprobe reference counters), read volatile.
#[allow(non_upper_case_globals)]
#[no_mangle]
#[used]
#[link_section = ".probes"]
static mut culpert_span_enter_semaphore: u16 = 0;

#[allow(non_upper_case_globals)]
#[no_mangle]
#[used]
#[link_section = ".probes"]
static mut culpert_span_exit_semaphore: u16 = 0;

/// The span_enter semaphore as the program sees it: non-zero while a profiler listens.
#[inline(always)]
pub fn span_enter_semaphore() -> u16 {
    // SAFETY: a plain load of a u16 the kernel may change at any time; volatile
    // so that every call reads it again.
    unsafe { read_volatile(addr_of!(culpert_span_enter_semaphore)) }
}

/// The span_exit semaphore as the program sees it.
#[inline(always)]
pub fn span_exit_semaphore() -> u16 {
    // SAFETY: as span_enter_semaphore()
    unsafe { read_volatile(addr_of!(culpert_span_exit_semaphore)) }
}

/// The text of one probe site: the `nop` the uprobe replaces and its note.
/// `.note.stapsdt` takes the flags "?" (the group of the code around it, so
/// a discarded copy of the code takes its note along), as `<sys/sdt.h>`
/// does; `.stapsdt.base` is defined once per object (weak, hidden, comdat)
/// and lets the reader correct for a prelinked or moved object.
macro_rules! culpert_site {
    ($semaphore:literal, $name:literal, $args:literal) => {
        concat!(
            "990: nop\n",
            ".pushsection .note.stapsdt, \"?\", \"note\"\n",
            ".balign 4\n",
            ".4byte 992f-991f, 994f-993f, 3\n",
            "991: .asciz \"stapsdt\"\n",
            "992: .balign 4\n",
            "993: .8byte 990b\n",
            ".8byte _.stapsdt.base\n",
            ".8byte ",
            $semaphore,
            "\n",
            ".asciz \"culpert\"\n",
            ".asciz \"",
            $name,
            "\"\n",
            ".asciz \"",
            $args,
            "\"\n",
            "994: .balign 4\n",
            ".popsection\n",
            ".ifndef _.stapsdt.base\n",
            ".pushsection .stapsdt.base, \"aG\", \"progbits\", .stapsdt.base, comdat\n",
            ".weak _.stapsdt.base\n",
            ".hidden _.stapsdt.base\n",
            "_.stapsdt.base: .space 1\n",
            ".size _.stapsdt.base, 1\n",
            ".popsection\n",
            ".endif\n",
        )
    };
}

/// Fires culpert:span_enter.  Call it only while span_enter_semaphore() is
/// non-zero: unprofiled, the caller's branch is all the cost there is.
#[inline(never)]
#[allow(named_asm_labels)] // _.stapsdt.base: defined once per object, guarded by .ifndef
pub fn span_enter(id: u64, parent_id: u64, name: &'static str) {
    let (ptr, len) = (name.as_ptr(), name.len() as u64);

    // SAFETY: a nop and assembler-time data; the operands are only named in
    // the note, which the profiler reads.  `readonly`: the profiler reads the
    // name's bytes, so they must be in memory, and nothing moves across it.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        asm!(
            culpert_site!(
                "culpert_span_enter_semaphore",
                "span_enter",
                "8@{0} 8@{1} 8@{2} 8@{3}"
            ),
            in(reg) id,
            in(reg) parent_id,
            in(reg) ptr,
            in(reg) len,
            options(att_syntax, readonly, nostack, preserves_flags)
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        asm!(
            culpert_site!(
                "culpert_span_enter_semaphore",
                "span_enter",
                "8@{0} 8@{1} 8@{2} 8@{3}"
            ),
            in(reg) id,
            in(reg) parent_id,
            in(reg) ptr,
            in(reg) len,
            options(readonly, nostack, preserves_flags)
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = (id, parent_id, ptr, len);
}

/// Fires culpert:span_exit; call it only while span_exit_semaphore() is non-zero.
#[inline(never)]
#[allow(named_asm_labels)] // as in span_enter
pub fn span_exit(id: u64) {
    // SAFETY: as in span_enter
    #[cfg(target_arch = "x86_64")]
    unsafe {
        asm!(
            culpert_site!("culpert_span_exit_semaphore", "span_exit", "8@{0}"),
            in(reg) id,
            options(att_syntax, readonly, nostack, preserves_flags)
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        asm!(
            culpert_site!("culpert_span_exit_semaphore", "span_exit", "8@{0}"),
            in(reg) id,
            options(readonly, nostack, preserves_flags)
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = id;
}
