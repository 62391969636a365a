/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a function's calls end, found in its code: every return
 * instruction a call can leave through, so that plain uprobes there see
 * the return value and the end of the call without a return probe.  A
 * return probe (uretprobe, or a uprobe session's return half) replaces the
 * return address on the user stack with the [uprobes] trampoline, which
 * has no unwind information: a C++ exception or a Rust panic unwinding
 * through that frame calls std::terminate.  Plain uprobes change nothing
 * the program or its unwinder reads.
 *
 * The code is decoded from the function's start to its end (the symbol's
 * size); a jump out of it (a tail call, a .cold part) is followed into the
 * code it reaches (the symbol or CFI range there), a jump through the PLT
 * or the GOT to a function this object defines as well; tail calls to
 * functions of other objects are listed by name for the caller to judge.
 * Jumps through a register (jump tables) are taken to stay in the function.
 * x86-64 is decoded with capstone; arm64 word by word (a64insn.h: ret, b,
 * the conditional branches, br), and its exits are never hoisted.
 */
#ifndef CULPERT_EXITS_H
#define CULPERT_EXITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfobj;

/* return instructions kept per function; more makes the set incomplete */
#define EXITS_MAX		64
/* code ranges followed per function (itself, tail-called and cold parts) */
#define EXITS_MAX_REGIONS	16
/* tail calls into other objects listed per function */
#define EXITS_MAX_TAILS		4
#define EXITS_NAME_LEN		128
#define EXITS_REASON_LEN	192

/* an exit moved to a branch before it (hoist.h): the branch, and its BPF cookie */
struct exit_hoist {
	uint64_t offset;		/* file offset */
	uint64_t cookie;		/* CULPERT_HOIST_* */
};

struct exits {
	uint64_t offsets[EXITS_MAX];	/* file offsets of the return instructions still probed */
	size_t n;
	struct exit_hoist hoists[EXITS_MAX];	/* the others' probes, when asked to move them */
	size_t n_hoists;
	/* tail calls to functions another object defines (by PLT/GOT symbol name) */
	char tails[EXITS_MAX_TAILS][EXITS_NAME_LEN];
	size_t n_tails;
	bool complete;			/* every way out is in offsets[] or tails[] */
	char reason[EXITS_REASON_LEN];	/* why not, when !complete */
	size_t regions;			/* code ranges decoded */
};

/*
 * The exits of the function at virtual address `vaddr` of `obj`, `size`
 * bytes long (0: take the range from the CFI); with `hoist`, those that
 * can be are moved to the branches before them (hoist.h).  An incomplete
 * set is a result, not an error.  0, or -ENOMEM.
 */
int exits__find(struct elfobj *obj, uint64_t vaddr, uint64_t size, bool hoist, struct exits *out);

#endif /* CULPERT_EXITS_H */
