/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks for the unwinder tests, captured the way the BPF side captures a
 * sampled allocation: registers at the entry of a function (unwind_capture
 * plays malloc) and a copy of the stack from the stack pointer up.  The
 * callers live in unwind_chain.c, built without frame pointers.
 */
#ifndef CULPERT_TEST_UNWIND_CHAIN_H
#define CULPERT_TEST_UNWIND_CHAIN_H

#include <linux/types.h>
#include <stddef.h>

#include "culpert.h"

#define UNWIND_CAPTURE_MAX (64 * 1024)

struct unwind_capture {
	struct culpert_regs regs;	/* first: the assembly stub stores at fixed offsets */
	size_t len;			/* bytes copied from regs.sp: fewer where the stack ends */
	unsigned char stack[UNWIND_CAPTURE_MAX];
};

/*
 * The "allocator": at its entry, records ip = its own address, sp pointing
 * at the return address, and the callee-saved registers, then copies the
 * stack.  Carries CFI like any compiled function.
 */
void unwind_capture(struct unwind_capture *cap);

/* chain_a -> chain_b -> chain_c -> unwind_capture; returns a value so no call is a tail call */
int chain_a(struct unwind_capture *cap);
/* qsort() -> (glibc, no frame pointers) -> capture_cmp -> unwind_capture */
int via_qsort(struct unwind_capture *cap);
/* via_no_cfi -> call_without_cfi (assembly, no CFI, rbp frame) -> unwind_capture */
int via_no_cfi(struct unwind_capture *cap);
/* recurse n levels through chain_rec, then capture: stacks of a chosen depth */
int chain_rec(struct unwind_capture *cap, int n);

#endif /* CULPERT_TEST_UNWIND_CHAIN_H */
