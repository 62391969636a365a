/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Was an object built with frame pointers?  There is no ELF marker for it,
 * so look at the code: with -fno-omit-frame-pointer nearly every function
 * opens with push %rbp; mov %rsp,%rbp (arm64: stp x29, x30, [sp, #-N]!;
 * mov x29, sp), without it nearly none does.
 */
#ifndef CULPERT_FPCHECK_H
#define CULPERT_FPCHECK_H

#include <stdbool.h>
#include <stddef.h>

struct elfobj;

struct fp_evidence {
	size_t functions;	/* function prologues examined */
	size_t with_fp;		/* of those, setting up fp_reg as frame pointer */
	const char *fp_reg;	/* "%rbp", "x29" */
	bool a64;		/* arm64 code */
};

/* 0 or -errno (-ENOENT: no function symbols to examine) */
int fpcheck(struct elfobj *obj, struct fp_evidence *ev);
/* the verdict: at least half of the examined functions keep a frame pointer */
bool fp_evidence__has_fp(const struct fp_evidence *ev);

struct procmaps;
struct procmap;
struct objcache;
/*
 * Do the stacks of allocations keep frame pointers all the way: the
 * executable's functions that allocate, and those of every mapped library
 * on an allocation path (the executable calls one of its exported
 * functions that allocate; not the allocators themselves)?  1 yes, 0 no,
 * with the evidence or the object at fault in `why`, and the libraries
 * without frame pointers left out (docs/unwind.md, "Choosing").
 */
int fp_path_judge(const struct procmaps *maps, struct objcache *objs, const struct procmap *exe,
		  char *why, size_t len);

#endif /* CULPERT_FPCHECK_H */
