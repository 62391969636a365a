/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One thread of another process borrowed to run a few syscalls and calls
 * (docs/inject.md).  PTRACE_SEIZE + PTRACE_INTERRUPT, never SIGSTOP.  While
 * it is ours, a signal frame holding its registers, FPU state and signal
 * mask sits below its red zone, and every code path it can take on its
 * own ends in rt_sigreturn through that frame: if culpert-bpf dies at any
 * moment, the kernel detaches and the thread returns to where it was.
 * x86-64 only: elsewhere hijack__seize() fails with -EOPNOTSUPP.
 */
#ifndef CULPERT_HIJACK_H
#define CULPERT_HIJACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* code in the target's libc that the borrowed thread runs */
struct hijack_gadgets {
	uint64_t syscall_ret;	/* "syscall; ret" */
	uint64_t restore_rt;	/* "mov $15, %rax; syscall": rt_sigreturn, libc's sa_restorer */
};

/* the size of the code page and of the stack the calls run on */
#define HIJACK_CODE_SIZE	4096
#define HIJACK_STACK_SIZE	(256 << 10)

struct hijack {
	pid_t pid, tid;
	int mem_fd;			/* /proc/PID/mem: writes the read-only code page */
	unsigned char regs[27 * 8];	/* struct user_regs_struct as stopped */
	unsigned char *xstate;		/* its FPU state (PTRACE_GETREGSET NT_X86_XSTATE) */
	size_t xstate_len;
	uint64_t frame;			/* the signal frame's address; 0: not armed */
	uint64_t scratch;		/* code page + stack, mapped in the target; 0: none */
	uint64_t stopped_ns;		/* CLOCK_MONOTONIC at the stop */
	bool in_syscall;		/* stopped inside a syscall */
	bool resumed;			/* the thread has been handed back */
	unsigned int trips;		/* stops it was resumed from and waited on again */
	struct hijack_gadgets g;
};

/*
 * Seize and interrupt tid of pid and read its registers; the thread is
 * stopped when this returns 0.  -EPERM, -ESRCH (gone), -EBUSY (another
 * tracer), -EOPNOTSUPP (not x86-64).
 */
int hijack__seize(struct hijack *h, pid_t pid, pid_t tid, const struct hijack_gadgets *g);
/* where it stopped: instruction and stack pointer, syscall number or -1 */
void hijack__where(const struct hijack *h, uint64_t *ip, uint64_t *sp, long *nr);
/*
 * Hand an untouched thread back: an epoll_wait or sigtimedwait the stop
 * ended with EINTR is restarted (signal(7): they are never restarted on
 * their own).  Returns how long it was stopped, in ns.
 */
uint64_t hijack__let_go(struct hijack *h);
/*
 * Whether the n stack words at w, w[0] being libc's __restore_rt, hold the
 * kernel's signal frame (uc_flags, uc_link 0, then the interrupted
 * registers: their instruction and stack pointers in *ip, *sp), rather
 * than a stale copy of the address (sigaction's sa_restorer).  true when
 * it cannot tell (n too short): a frame is what must never be missed.
 */
bool hijack__sigframe(const uint64_t *w, size_t n, uint64_t *ip, uint64_t *sp);
/*
 * Write the signal frame below the red zone of the stack it stopped on
 * and block every signal (they stay pending and are delivered when the
 * thread is handed back).  0, or -errno with the thread handed back.
 */
int hijack__arm(struct hijack *h);
/* a raw syscall on the armed thread; *ret is what it returned */
int hijack__syscall(struct hijack *h, long nr, const uint64_t args[6], int64_t *ret);
/*
 * Map a code page and a stack in the target for hijack__call().  0 or -errno.
 */
int hijack__map_scratch(struct hijack *h);
/* len bytes into the code page at off (strings the calls take) */
int hijack__put(struct hijack *h, size_t off, const void *data, size_t len);
/* its address in the target */
uint64_t hijack__scratch_addr(const struct hijack *h, size_t off);
/*
 * Call fn(a0, a1) on the armed thread's scratch stack and wait for it, at
 * most timeout_ns; *ret is its return value.  Its first 4 syscalls stop
 * it, the rest do not; it returns into the code page, which sleeps 500 ms
 * (the marker) and then returns through the frame: culpert-bpf stops it at
 * or in that sleep.  -ETIMEDOUT leaves the thread to finish and return
 * through its frame on its own.
 */
int hijack__call(struct hijack *h, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t timeout_ns,
		 uint64_t *ret);
/*
 * Unmap the scratch, restore the signal mask, FPU state and registers
 * (an interrupted syscall restarts as the kernel would have restarted it)
 * and detach.  Returns how long the thread was held, in ns.
 */
uint64_t hijack__finish(struct hijack *h);

#endif /* CULPERT_HIJACK_H */
