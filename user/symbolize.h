/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Address -> source frames for one ELF object, shared by capture-time
 * symbolization (culpert-bpf) and `culpert symbolize`.
 */
#ifndef CULPERT_SYMBOLIZE_H
#define CULPERT_SYMBOLIZE_H

#include <stdint.h>

struct elfobj;

/* inline frames kept per address, innermost first */
#define SYM_MAX_FRAMES 8

struct sym_frame {
	const char *name;		/* display name */
	const char *system_name;	/* as in the symbol table */
	const char *file;		/* "" when unknown */
	int64_t line;			/* 0 when unknown */
	int64_t column;
	int64_t start_line;
};

/* frames for virtual address `vaddr` of obj, innermost first; count, 0 when unknown */
int symbolize_vaddr(struct elfobj *obj, uint64_t vaddr, struct sym_frame *out, int max);

#endif /* CULPERT_SYMBOLIZE_H */
