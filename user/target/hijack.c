// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Borrowing a thread (docs/inject.md).  The thread is only ever in one of
 * three states: untouched (its own registers), or ours with the stack
 * pointer at the signal frame and the instruction pointer on a path that
 * reaches rt_sigreturn (libc's "syscall; ret" then __restore_rt, or our
 * code page whose tail is the same), or handed back.  A tracer that dies
 * leaves it in one of them, and each runs on to the thread's own code.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "clock.h"
#include "hijack.h"
#include "log.h"
#include "readfile.h"

#ifdef __x86_64__
#include <sys/user.h>

_Static_assert(sizeof(struct user_regs_struct) == sizeof(((struct hijack *)0)->regs),
	       "struct hijack.regs holds user_regs_struct");

/* the kernel's signal frame (arch/x86/include/uapi/asm/sigcontext.h, ucontext.h) */
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2, fpstate, reserved1[8];
};

struct k_ucontext {
	uint64_t uc_flags, uc_link;
	uint64_t ss_sp;
	int32_t ss_flags, pad;
	uint64_t ss_size;
	struct k_sigcontext mc;
	uint64_t sigmask;
};
_Static_assert(sizeof(struct k_ucontext) == 304, "the kernel's struct ucontext");

#define UC_FP_XSTATE		0x1
#define FP_XSTATE_MAGIC1	0x46505853U
#define FP_XSTATE_MAGIC2	0x46505845U
/* the fxsave area's software bytes, where the kernel puts the xstate layout */
#define FX_SW_BYTES_OFF		464
#define RED_ZONE		128
/* syscall numbers the kernel reports when a stop ends them with a restart code */
#define ERESTARTSYS		512
#define ERESTARTNOINTR		513
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516
/*
 * The code page: what a call returns into, the end of its marker syscall
 * (a nanosleep the call's result waits in, in %r12, to be read), and the
 * nanosleep's time: how long a thread whose tracer died after its call
 * waits before going home, and how late culpert-bpf may come to read it.
 */
#define CODE_RET_OFF		0
#define CODE_MARKER_END		29
#define CODE_SLEEP_OFF		32
#define MARKER_WAIT_NS		500000000
/* how often culpert-bpf looks whether a call has reached the marker */
#define MARKER_POLL_NS		50000

static struct user_regs_struct *regs_of(struct hijack *h)
{
	return (struct user_regs_struct *)h->regs;
}

static int set_regs(struct hijack *h, const struct user_regs_struct *r)
{
	return ptrace(PTRACE_SETREGS, h->tid, NULL, r) ? -errno : 0;
}

static int get_regs(struct hijack *h, struct user_regs_struct *r)
{
	return ptrace(PTRACE_GETREGS, h->tid, NULL, r) ? -errno : 0;
}

/* wait for the next stop of the thread; its wait status in *st */
static int wait_stop(struct hijack *h, int *st)
{
	h->trips++;
	for (;;) {
		pid_t r = waitpid(h->tid, st, __WALL);

		if (r == h->tid)
			return WIFSTOPPED(*st) ? 0 : -ESRCH;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static bool is_syscall_stop(int st)
{
	return WIFSTOPPED(st) && WSTOPSIG(st) == (SIGTRAP | 0x80);
}

/* a signal-delivery stop for a signal the target should get; 0 for our own traps */
static int delivered_signal(int st)
{
	int sig = WSTOPSIG(st);

	if (sig == (SIGTRAP | 0x80) || (st >> 16) || sig == SIGTRAP)
		return 0;
	return sig;
}

/*
 * Stop the running thread (PTRACE_INTERRUPT).  A signal on its way stops
 * it first: let through (it runs on the registers the thread has) while
 * we keep waiting for ours.
 */
static int interrupt(struct hijack *h)
{
	int st, err;

	if (ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL))
		return -errno;
	for (;;) {
		err = wait_stop(h, &st);
		if (err)
			return err;
		if (st >> 16 == PTRACE_EVENT_STOP)
			return 0;
		if (ptrace(PTRACE_CONT, h->tid, NULL, (void *)(long)delivered_signal(st)))
			return -errno;
	}
}

int hijack__seize(struct hijack *h, pid_t pid, pid_t tid, const struct hijack_gadgets *g)
{
	struct iovec iov;
	int ret;

	memset(h, 0, sizeof(*h));
	h->pid = pid;
	h->tid = tid;
	h->mem_fd = -1;
	h->g = *g;
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD))
		return errno == EPERM && tid != pid ? -EBUSY : -errno;
	ret = interrupt(h);
	if (ret) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return ret;
	}
	h->stopped_ns = clock_ns(CLOCK_MONOTONIC);
	ret = get_regs(h, regs_of(h));
	if (!ret) {
		h->xstate_len = 16384;
		h->xstate = calloc(1, h->xstate_len);
		iov.iov_base = h->xstate;
		iov.iov_len = h->xstate_len;
		if (!h->xstate)
			ret = -ENOMEM;
		else if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov))
			ret = -errno;
		else
			h->xstate_len = iov.iov_len;
	}
	if (ret) {
		hijack__let_go(h);
		return ret;
	}
	h->in_syscall = (long)regs_of(h)->orig_rax >= 0;
	return 0;
}

void hijack__where(const struct hijack *h, uint64_t *ip, uint64_t *sp, long *nr)
{
	const struct user_regs_struct *r = (const struct user_regs_struct *)h->regs;

	*ip = r->rip;
	*sp = r->rsp;
	*nr = (long)r->orig_rax;
}

/*
 * These end with EINTR when a stop interrupts them, even without a
 * handler (signal(7), "Interruption of system calls ... by stop
 * signals"): the program would see an error our stop caused.
 */
static bool eintr_on_stop(long nr)
{
	static const long calls[] = {
		SYS_epoll_wait, SYS_epoll_pwait, 441 /* epoll_pwait2 */, SYS_semop,
		SYS_semtimedop, SYS_rt_sigtimedwait, SYS_io_getevents, SYS_read, SYS_recvfrom,
		SYS_recvmsg, SYS_sendto, SYS_sendmsg, SYS_accept, SYS_accept4,
	};
	size_t i;

	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i] == nr)
			return true;
	return false;
}

/*
 * The registers to hand back: as stopped, except that an EINTR our stop
 * caused becomes ERESTARTNOHAND, which the kernel turns into a restart
 * when no handler runs, and into EINTR when one does (as a signal would).
 */
static void handback_regs(struct hijack *h, struct user_regs_struct *r)
{
	*r = *regs_of(h);
	if ((long)r->orig_rax >= 0 && (long)r->rax == -EINTR && eintr_on_stop((long)r->orig_rax))
		r->rax = (uint64_t)-ERESTARTNOHAND;
}

uint64_t hijack__let_go(struct hijack *h)
{
	struct user_regs_struct r;

	handback_regs(h, &r);
	if (r.rax != regs_of(h)->rax)
		set_regs(h, &r);
	ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
	h->resumed = true;
	free(h->xstate);
	h->xstate = NULL;
	if (h->mem_fd >= 0)
		close(h->mem_fd);
	h->mem_fd = -1;
	return clock_ns(CLOCK_MONOTONIC) - h->stopped_ns;
}

/*
 * The frame's registers: where the thread continues on its own.  The
 * kernel does not restart a syscall on rt_sigreturn (orig_ax is -1 then),
 * so an interrupted one is rewound here, as the kernel would rewind it
 * with no handler to run.
 */
static void frame_regs(const struct user_regs_struct *r, struct k_sigcontext *mc)
{
	long err = (long)r->rax;

	mc->r8 = r->r8; mc->r9 = r->r9; mc->r10 = r->r10; mc->r11 = r->r11;
	mc->r12 = r->r12; mc->r13 = r->r13; mc->r14 = r->r14; mc->r15 = r->r15;
	mc->rdi = r->rdi; mc->rsi = r->rsi; mc->rbp = r->rbp; mc->rbx = r->rbx;
	mc->rdx = r->rdx; mc->rax = r->rax; mc->rcx = r->rcx; mc->rsp = r->rsp;
	mc->rip = r->rip; mc->eflags = r->eflags;
	mc->cs = (uint16_t)r->cs;
	mc->ss = (uint16_t)r->ss;
	if ((long)r->orig_rax < 0)
		return;
	/*
	 * rt_sigreturn resets the restart block (restart_syscall would fail
	 * with EINTR): a nanosleep or a poll with a timeout is issued again
	 * whole, its arguments still in their registers, and sleeps longer.
	 */
	if (err == -ERESTARTSYS || err == -ERESTARTNOINTR || err == -ERESTARTNOHAND ||
	    err == -ERESTART_RESTARTBLOCK || (err == -EINTR && eintr_on_stop((long)r->orig_rax))) {
		mc->rax = r->orig_rax;
		mc->rip -= 2;
	}
}

static int write_mem(struct hijack *h, uint64_t addr, const void *buf, size_t len)
{
	ssize_t n;

	if (h->mem_fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mem", (int)h->pid);
		h->mem_fd = open(path, O_RDWR | O_CLOEXEC);
		if (h->mem_fd < 0)
			return -errno;
	}
	n = pwrite(h->mem_fd, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* where the thread stands after each of our steps: at the frame, about to return through it */
static void at_frame(struct hijack *h, struct user_regs_struct *r)
{
	*r = *regs_of(h);
	r->rsp = h->frame;
	r->orig_rax = (uint64_t)-1;
}

/* the signals the thread blocks, from its status file */
static int blocked_mask(const struct hijack *h, uint64_t *mask)
{
	char path[64], *text, *p;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)h->pid, (int)h->tid);
	ret = read_file_at(AT_FDCWD, path, &text, NULL);
	if (ret)
		return ret;
	p = strstr(text, "\nSigBlk:");
	if (!p || sscanf(p + 8, "%" SCNx64, mask) != 1)
		ret = -EIO;
	free(text);
	return ret;
}

int hijack__arm(struct hijack *h)
{
	const struct user_regs_struct *r = regs_of(h);
	size_t fp_off, len;
	unsigned char *buf;
	struct k_ucontext *uc;
	uint64_t base, all = ~0ULL;
	uint64_t args[6] = { SIG_SETMASK, 0, 0, 8 };
	int64_t res;
	int ret;

	/* pretcode, ucontext, the sigset we block with, then the FPU state 64-aligned */
	fp_off = (8 + sizeof(*uc) + 8 + 63) & ~(size_t)63;
	len = fp_off + h->xstate_len + 4;
	base = ((r->rsp - RED_ZONE - len) & ~(uint64_t)63);
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &h->g.restore_rt, 8);
	uc = (struct k_ucontext *)(buf + 8);
	frame_regs(r, &uc->mc);
	memcpy(buf + 8 + sizeof(*uc), &all, 8);
	memcpy(buf + fp_off, h->xstate, h->xstate_len);
	/* the xstate layout the kernel wrote is what it checks on return; else it takes the fxsave part */
	if (h->xstate_len > FX_SW_BYTES_OFF + 8) {
		uint32_t magic1, xsize;
		uint32_t magic2 = FP_XSTATE_MAGIC2;

		memcpy(&magic1, buf + fp_off + FX_SW_BYTES_OFF, 4);
		memcpy(&xsize, buf + fp_off + FX_SW_BYTES_OFF + 8, 4);
		if (magic1 == FP_XSTATE_MAGIC1 && xsize + 4 <= h->xstate_len + 4 &&
		    xsize <= h->xstate_len) {
			memcpy(buf + fp_off + xsize, &magic2, 4);
			uc->uc_flags = UC_FP_XSTATE;
		}
	}
	uc->mc.fpstate = base + fp_off;
	/* its mask now, so that a return through the frame before our first syscall keeps it */
	ret = blocked_mask(h, &uc->sigmask);
	if (ret) {
		free(buf);
		goto fail;
	}
	h->frame = base;
	ret = write_mem(h, base, buf, len);
	free(buf);
	if (ret)
		goto fail;
	args[1] = base + 8 + sizeof(*uc);
	args[2] = base + 8 + offsetof(struct k_ucontext, sigmask);
	/* rt_sigprocmask writes the old mask straight into the frame's uc_sigmask */
	ret = hijack__syscall(h, SYS_rt_sigprocmask, args, &res);
	if (!ret && res)
		ret = (int)res;
	if (ret)
		goto fail;
	return 0;
fail:
	h->frame = 0;
	if (!h->resumed)
		hijack__let_go(h);
	return ret;
}

/* which side of a syscall a syscall stop is on */
static int syscall_op(struct hijack *h)
{
	struct __ptrace_syscall_info info;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, h->tid, (void *)sizeof(info), &info) <= 0)
		return -1;
	return info.op;
}

/*
 * Syscall stops, never PTRACE_SINGLESTEP: a tracer that dies unlinks its
 * tracees without clearing the trap flag, and the next instruction would
 * raise a SIGTRAP nobody catches.
 */
int hijack__syscall(struct hijack *h, long nr, const uint64_t args[6], int64_t *ret)
{
	struct user_regs_struct r;
	int st, err, sig;

	at_frame(h, &r);
	r.rip = h->g.syscall_ret;
	r.rax = (uint64_t)nr;
	r.rdi = args[0]; r.rsi = args[1]; r.rdx = args[2];
	r.r10 = args[3]; r.r8 = args[4]; r.r9 = args[5];
	err = set_regs(h, &r);
	if (err)
		return err;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, h->tid, NULL, NULL))
			return -errno;
		err = wait_stop(h, &st);
		if (err)
			return err;
		/*
		 * A signal before the mask was set: deliver it now, on top of
		 * our registers; its handler returns into the gadget and the
		 * frame takes the thread home.  Start again with another stop.
		 */
		sig = delivered_signal(st);
		if (sig) {
			ptrace(PTRACE_DETACH, h->tid, NULL, (void *)(long)sig);
			h->resumed = true;
			return -EAGAIN;
		}
		if (!is_syscall_stop(st))
			continue;
		err = get_regs(h, &r);
		if (err)
			return err;
		/* past the syscall, on the ret into __restore_rt */
		if (r.rip == h->g.syscall_ret + 2 && syscall_op(h) == PTRACE_SYSCALL_INFO_EXIT)
			break;
	}
	*ret = (int64_t)r.rax;
	return 0;
}

int hijack__map_scratch(struct hijack *h)
{
	uint64_t args[6] = { 0, HIJACK_CODE_SIZE + HIJACK_STACK_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, (uint64_t)-1, 0 };
	/*
	 * mov %rax,%r12; movabs $frame,%rsp; lea sleep(%rip),%rdi; xor %esi,%esi;
	 * mov $SYS_nanosleep,%eax; syscall; ret (into __restore_rt, through the frame)
	 */
	unsigned char code[CODE_SLEEP_OFF + 16] = {
		0x49, 0x89, 0xc4, 0x48, 0xbc, 0, 0, 0, 0, 0, 0, 0, 0,
		0x48, 0x8d, 0x3d, CODE_SLEEP_OFF - 20, 0, 0, 0, 0x31, 0xf6,
		0xb8, SYS_nanosleep, 0, 0, 0, 0x0f, 0x05, 0xc3 };
	struct timespec sleep = { MARKER_WAIT_NS / 1000000000, MARKER_WAIT_NS % 1000000000 };
	int64_t res;
	int ret;

	ret = hijack__syscall(h, SYS_mmap, args, &res);
	if (ret)
		return ret;
	if (res < 0 && res > -4096)
		return (int)res;
	h->scratch = (uint64_t)res;
	memcpy(code + 5, &h->frame, 8);
	memcpy(code + CODE_SLEEP_OFF, &sleep, sizeof(sleep));
	ret = hijack__put(h, CODE_RET_OFF, code, sizeof(code));
	if (ret)
		return ret;
	args[0] = h->scratch;
	args[1] = HIJACK_CODE_SIZE;
	args[2] = PROT_READ | PROT_EXEC;
	ret = hijack__syscall(h, SYS_mprotect, args, &res);
	return ret ?: (int)res;
}

int hijack__put(struct hijack *h, size_t off, const void *data, size_t len)
{
	if (!h->scratch || off + len > HIJACK_CODE_SIZE)
		return -EINVAL;
	return write_mem(h, h->scratch + off, data, len);
}

uint64_t hijack__scratch_addr(const struct hijack *h, size_t off)
{
	return h->scratch + off;
}

/*
 * The thread sleeps in the marker: its call has returned.  Read from
 * /proc/PID/task/TID/syscall ("NR ARGS... SP PC" while blocked in a call),
 * which needs no stop.
 */
static bool at_marker(struct hijack *h)
{
	char path[64], buf[256], *pc;
	long nr;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)h->pid, (int)h->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	nr = strtol(buf, NULL, 10);
	pc = strrchr(buf, ' ');
	return nr == SYS_nanosleep && pc &&
	       strtoull(pc + 1, NULL, 16) == h->scratch + CODE_MARKER_END;
}

/*
 * Its first syscalls stop it, so a short call is seen ending at once (at
 * the marker's entry); from the MARKER_STOPS-th on it runs on without a
 * stop (PTRACE_CONT): a stop at each syscall of a long call (dlopen's, the
 * takeover's mprotects) cost two context switches each and the
 * scheduler's delay to run both sides again, which under load made most
 * of the time the thread was held.  culpert-bpf then looks every 50 us
 * whether it sleeps in the marker, and stops it there.  Either way the
 * thread ends at the marker's syscall-exit stop (a stop in the sleep: its
 * restart is dropped when the next registers are set).
 */
#define MARKER_STOPS		4

/* at a syscall stop: 1 at the marker's entry, 0 elsewhere, or -errno */
static int stopped_at_marker(struct hijack *h, struct user_regs_struct *r)
{
	int err = get_regs(h, r);

	if (err)
		return err;
	return r->rip == h->scratch + CODE_MARKER_END && (long)r->orig_rax == SYS_nanosleep &&
	       syscall_op(h) == PTRACE_SYSCALL_INFO_ENTRY;
}

/* skip the marker's sleep: on to its exit stop, at once */
static int skip_sleep(struct hijack *h, struct user_regs_struct *r)
{
	int st, err;

	r->orig_rax = (uint64_t)-1;
	err = set_regs(h, r);
	for (; !err;) {
		if (ptrace(PTRACE_SYSCALL, h->tid, NULL, NULL))
			return -errno;
		err = wait_stop(h, &st);
		if (!err && is_syscall_stop(st))
			return 0;
	}
	return err;
}

/* PTRACE_CONT, then wait for the sleep in the marker and stop the thread there */
static int poll_marker(struct hijack *h, uint64_t deadline, struct user_regs_struct *r)
{
	struct timespec poll = { 0, MARKER_POLL_NS };
	int st, err;
	pid_t w;

	if (ptrace(PTRACE_CONT, h->tid, NULL, NULL))
		return -errno;
	while (!at_marker(h)) {
		/* a signal its call raised (its own are blocked): delivered, as without us */
		w = waitpid(h->tid, &st, __WALL | WNOHANG);
		if (w == h->tid) {
			if (!WIFSTOPPED(st))
				return -ESRCH;
			h->trips++;
			if (ptrace(PTRACE_CONT, h->tid, NULL, (void *)(long)delivered_signal(st)))
				return -errno;
		}
		if (clock_ns(CLOCK_MONOTONIC) > deadline)
			return -ETIMEDOUT;
		nanosleep(&poll, NULL);
	}
	err = interrupt(h);
	if (!err)
		err = get_regs(h, r);
	if (err)
		return err;
	/* its sleep ended first: it went home through the frame, result unread */
	return r->rip == h->scratch + CODE_MARKER_END ? 0 : -ETIMEDOUT;
}

int hijack__call(struct hijack *h, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t timeout_ns,
		 uint64_t *ret)
{
	uint64_t ret_addr = h->scratch + CODE_RET_OFF;
	uint64_t sp = h->scratch + HIJACK_CODE_SIZE + HIJACK_STACK_SIZE - 8;
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + timeout_ns;
	struct user_regs_struct r;
	int st, err, sig = 0, stops = 0;

	err = write_mem(h, sp, &ret_addr, 8);
	if (err)
		return err;
	at_frame(h, &r);
	r.rsp = sp;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	err = set_regs(h, &r);
	while (!err) {
		if (stops == MARKER_STOPS) {
			err = poll_marker(h, deadline, &r);
			if (!err)
				*ret = r.r12;
			break;
		}
		if (ptrace(PTRACE_SYSCALL, h->tid, NULL, (void *)(long)sig))
			return -errno;
		err = wait_stop(h, &st);
		if (err)
			return err;
		sig = delivered_signal(st);
		if (!is_syscall_stop(st))
			continue;
		err = stopped_at_marker(h, &r);
		if (err > 0) {
			*ret = r.r12;
			return skip_sleep(h, &r);
		}
		if (!err && clock_ns(CLOCK_MONOTONIC) > deadline)
			err = -ETIMEDOUT;
		stops++;
	}
	if (err == -ETIMEDOUT) {
		/* it finishes the call, sleeps in the marker and goes home on its own */
		ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
		h->resumed = true;
	}
	return err;
}

uint64_t hijack__finish(struct hijack *h)
{
	uint64_t args[6] = { SIG_SETMASK, 0, 0, 8 };
	struct user_regs_struct r;
	struct iovec iov = { h->xstate, h->xstate_len };
	int64_t res;

	if (h->resumed)
		return 0;
	if (h->scratch) {
		args[0] = h->scratch;
		args[1] = HIJACK_CODE_SIZE + HIJACK_STACK_SIZE;
		if (!hijack__syscall(h, SYS_munmap, args, &res))
			h->scratch = 0;
		args[0] = SIG_SETMASK;
		args[3] = 8;
	}
	if (h->frame) {
		/* the mask as the frame holds it: the thread's own */
		args[1] = h->frame + 8 + offsetof(struct k_ucontext, sigmask);
		args[2] = 0;
		if (hijack__syscall(h, SYS_rt_sigprocmask, args, &res) || res) {
			/* leave it to the frame: it restores all of it */
			ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
			h->resumed = true;
			return clock_ns(CLOCK_MONOTONIC) - h->stopped_ns;
		}
		ptrace(PTRACE_SETREGSET, h->tid, (void *)NT_X86_XSTATE, &iov);
	}
	handback_regs(h, &r);
	set_regs(h, &r);
	*regs_of(h) = r;
	return hijack__let_go(h);
}

/* the flags a kernel's frame may carry: UC_FP_XSTATE, UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS */
#define UC_KERNEL_FLAGS		0x7

bool hijack__sigframe(const uint64_t *w, size_t n, uint64_t *ip, uint64_t *sp)
{
	struct k_ucontext uc;

	*ip = *sp = 0;
	if (n * 8 < 8 + sizeof(uc))
		return true;
	memcpy(&uc, w + 1, sizeof(uc));
	if (uc.uc_flags & ~(uint64_t)UC_KERNEL_FLAGS || uc.uc_link)
		return false;
	*ip = uc.mc.rip;
	*sp = uc.mc.rsp;
	return true;
}

#else /* !__x86_64__ */

bool hijack__sigframe(const uint64_t *w, size_t n, uint64_t *ip, uint64_t *sp)
{
	(void)w;
	(void)n;
	*ip = *sp = 0;
	return true;
}

int hijack__seize(struct hijack *h, pid_t pid, pid_t tid, const struct hijack_gadgets *g)
{
	(void)g;
	memset(h, 0, sizeof(*h));
	h->pid = pid;
	h->tid = tid;
	h->mem_fd = -1;
	return -EOPNOTSUPP;
}

void hijack__where(const struct hijack *h, uint64_t *ip, uint64_t *sp, long *nr)
{
	(void)h;
	*ip = *sp = 0;
	*nr = -1;
}

uint64_t hijack__let_go(struct hijack *h)
{
	(void)h;
	return 0;
}

int hijack__arm(struct hijack *h)
{
	(void)h;
	return -EOPNOTSUPP;
}

int hijack__syscall(struct hijack *h, long nr, const uint64_t args[6], int64_t *ret)
{
	(void)h; (void)nr; (void)args; (void)ret;
	return -EOPNOTSUPP;
}

int hijack__map_scratch(struct hijack *h)
{
	(void)h;
	return -EOPNOTSUPP;
}

int hijack__put(struct hijack *h, size_t off, const void *data, size_t len)
{
	(void)h; (void)off; (void)data; (void)len;
	return -EOPNOTSUPP;
}

uint64_t hijack__scratch_addr(const struct hijack *h, size_t off)
{
	(void)h;
	return off;
}

int hijack__call(struct hijack *h, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t timeout_ns,
		 uint64_t *ret)
{
	(void)h; (void)fn; (void)a0; (void)a1; (void)timeout_ns; (void)ret;
	return -EOPNOTSUPP;
}

uint64_t hijack__finish(struct hijack *h)
{
	(void)h;
	return 0;
}

#endif
