// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! The start protocol of the Rust targets, as ready.h is for the C ones:
//! SIGUSR1 blocked, "pid N ready" printed, then the target waits for
//! SIGUSR1 so a profiler can attach first.  No crates: libc is declared by
//! hand; builds with Debian's rustc 1.63.  Used as `#[path = "ready.rs"] mod ready;`.

/// glibc's sigset_t: 1024 bits
#[repr(C)]
pub struct SigSet([u64; 16]);

extern "C" {
    fn sigemptyset(set: *mut SigSet) -> i32;
    fn sigaddset(set: *mut SigSet, sig: i32) -> i32;
    fn sigprocmask(how: i32, set: *const SigSet, old: *mut SigSet) -> i32;
    fn sigwait(set: *const SigSet, sig: *mut i32) -> i32;
}

const SIGUSR1: i32 = 10;
const SIG_BLOCK: i32 = 0;

/// Blocks SIGUSR1 and prints "pid N ready"; wait_usr1() with the set returned waits for it.
pub fn ready() -> SigSet {
    let mut set = SigSet([0; 16]);
    unsafe {
        sigemptyset(&mut set);
        sigaddset(&mut set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, std::ptr::null_mut());
    }
    println!("pid {} ready", std::process::id());
    set
}

pub fn wait_usr1(set: &SigSet) {
    let mut sig = 0;
    unsafe { sigwait(set, &mut sig) };
}
