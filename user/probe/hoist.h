/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Moving an exit probe off `ret`.  The kernel single-steps a uprobe on
 * `ret` (~20 us a hit here) but emulates one on a jump (~1 us).  A
 * function's last stretch before `ret` is straight-line code, entered
 * only through branches: a probe on each such branch (the direction that
 * enters the stretch known from its condition and the flags at the
 * probe) sees where the result will be -- which register `mov`s carry into
 * %rax by the `ret` -- and how far the stack pointer is from the return
 * slot.  Only when every entry into the stretch is such a branch; else the
 * probe stays on the `ret`.
 */
#ifndef CULPERT_HOIST_H
#define CULPERT_HOIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hoist_code {
	uint64_t start, end;	/* virtual addresses */
	const uint8_t *code;	/* end - start bytes */
};

/* a direct jump or conditional jump of the decoded code, from one instruction to an address */
struct hoist_branch {
	uint64_t from, to;
};

/* a probe for one way of one branch */
struct hoist_point {
	uint64_t vaddr;		/* the branch */
	uint8_t cc;		/* its condition code, when conditional */
	bool cond;
	bool taken;		/* the way that enters the stretch */
	uint16_t spec;		/* CULPERT_HOIST_SPEC(1, register, slot distance) */
};

#define HOIST_MAX_POINTS 8

/*
 * The probes standing for the `ret` at ret_vaddr, in code[] (the ranges
 * that were decoded for the function) given all of its direct branches
 * and whether any jump is indirect.  Returns their count (> 0), or 0 when
 * the exit must stay on the `ret` itself.
 */
size_t hoist__exit(const struct hoist_code *code, size_t n_code, const struct hoist_branch *br,
		   size_t n_br, bool indirect, uint64_t ret_vaddr,
		   struct hoist_point out[HOIST_MAX_POINTS]);

#endif /* CULPERT_HOIST_H */
