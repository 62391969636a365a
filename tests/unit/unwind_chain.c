// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Built with -O2 -fomit-frame-pointer whatever CFLAGS says (tests/Makefile.inc):
 * only the CFI can walk these frames.  Each function gives the unwinder
 * something different to get right.  test_unwind checks that the flags
 * took effect: a frame-pointer walk over the same copy must miss callers.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "unwind_chain.h"

#define NOINLINE __attribute__((noinline, noipa))

_Static_assert(offsetof(struct culpert_regs, ip) == 0 && offsetof(struct culpert_regs, sp) == 8 &&
	       offsetof(struct culpert_regs, bp) == 16 && offsetof(struct culpert_regs, bx) == 24 &&
	       offsetof(struct culpert_regs, r12) == 32 && offsetof(struct culpert_regs, r15) == 56,
	       "the stub below stores struct culpert_regs by offset");

void unwind_capture_copy(struct unwind_capture *cap) __attribute__((visibility("hidden"), used));

/*
 * rdi = cap.  Nothing but rax changes before the registers are stored, so
 * they are those of the entry; the copy is then made by a tail call, whose
 * frame lies below sp and leaves the copied bytes alone.
 */
__asm__(
	"	.text\n"
	"	.globl unwind_capture\n"
	"	.type unwind_capture, @function\n"
	"unwind_capture:\n"
	"	.cfi_startproc\n"
	"	leaq unwind_capture(%rip), %rax\n"
	"	movq %rax, 0(%rdi)\n"
	"	movq %rsp, 8(%rdi)\n"
	"	movq %rbp, 16(%rdi)\n"
	"	movq %rbx, 24(%rdi)\n"
	"	movq %r12, 32(%rdi)\n"
	"	movq %r13, 40(%rdi)\n"
	"	movq %r14, 48(%rdi)\n"
	"	movq %r15, 56(%rdi)\n"
	"	jmp unwind_capture_copy\n"
	"	.cfi_endproc\n"
	"	.size unwind_capture, .-unwind_capture\n");

/*
 * As the BPF side should copy (docs/unwind.md): stop at the first page that
 * cannot be read (the top of the stack).  One iovec per page because
 * process_vm_readv() never splits an iovec.
 */
void unwind_capture_copy(struct unwind_capture *cap)
{
	struct iovec local = { cap->stack, UNWIND_CAPTURE_MAX };
	struct iovec remote[UNWIND_CAPTURE_MAX / 4096 + 1];
	unsigned long addr = cap->regs.sp, end = addr + UNWIND_CAPTURE_MAX;
	int n = 0;
	ssize_t got;

	while (addr < end) {
		unsigned long next = (addr | 4095) + 1;

		if (next > end)
			next = end;
		remote[n].iov_base = (void *)addr;
		remote[n++].iov_len = next - addr;
		addr = next;
	}
	got = process_vm_readv(getpid(), &local, 1, remote, n, 0);
	cap->len = got > 0 ? (size_t)got : 0;
}

/*
 * Hand-written code without CFI (as JIT code or careless assembly), keeping
 * a frame pointer: the unwinder has to fall back to rbp here.
 */
__asm__(
	"	.text\n"
	"	.globl call_without_cfi\n"
	"	.type call_without_cfi, @function\n"
	"call_without_cfi:\n"
	"	pushq %rbp\n"
	"	movq %rsp, %rbp\n"
	"	call unwind_capture\n"
	"	popq %rbp\n"
	"	ret\n"
	"	.size call_without_cfi, .-call_without_cfi\n");

int call_without_cfi(struct unwind_capture *cap);

static volatile int sink;

NOINLINE int via_no_cfi(struct unwind_capture *cap)
{
	return call_without_cfi(cap) + 1;
}

/*
 * A large fixed frame, and rbp saved then zeroed: the caller's CFA (rbp-based,
 * see chain_b) is only found by restoring rbp from where the CFI says it was
 * pushed, and a frame-pointer walk from the captured rbp goes nowhere.
 */
NOINLINE static int chain_c(struct unwind_capture *cap)
{
	volatile char pad[1000];

	pad[0] = 1;
	__asm__ volatile("xorl %%ebp, %%ebp" ::: "rbp");
	unwind_capture(cap);
	return pad[0] + 1;
}

/* alloca: gcc keeps a frame in rbp even without frame pointers; the CFA is rbp + 16 */
NOINLINE static int chain_b(struct unwind_capture *cap, size_t n)
{
	char *p = __builtin_alloca(n);

	memset(p, 1, n);
	sink = p[n - 1];
	return chain_c(cap) + p[0];
}

/* every callee-saved register pushed: the CFI records six saves and a moving CFA */
NOINLINE int chain_a(struct unwind_capture *cap)
{
	__asm__ volatile("" ::: "rbx", "rbp", "r12", "r13", "r14", "r15");
	return chain_b(cap, 64 + (size_t)(sink & 1)) + 1;
}

static struct unwind_capture *qsort_cap;

NOINLINE static int capture_cmp(const void *a, const void *b)
{
	if (qsort_cap) {
		unwind_capture(qsort_cap);
		qsort_cap = NULL;
	}
	return *(const int *)a - *(const int *)b;
}

NOINLINE int via_qsort(struct unwind_capture *cap)
{
	int v[4] = { 4, 3, 2, 1 };

	qsort_cap = cap;
	qsort(v, 4, sizeof(v[0]), capture_cmp);
	return v[0] + 1;
}

NOINLINE int chain_rec(struct unwind_capture *cap, int n)
{
	volatile char pad[32];

	pad[0] = (char)n;
	if (n <= 0)
		unwind_capture(cap);
	else
		pad[0] += (char)chain_rec(cap, n - 1);
	return pad[0] + 1;
}
