/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DWARF of one object (elfutils libdw): an address to its source frames,
 * the inline chain innermost first, each with file:line, as
 * `addr2line -f -i` prints them.  Indexes are built lazily: compilation
 * unit ranges on first use, each unit's functions when it is first hit.
 */
#ifndef CULPERT_DWARFSYM_H
#define CULPERT_DWARFSYM_H

#include <stdint.h>

#include <elfutils/libdw.h>

struct dwarfsym;

/* one frame; strings belong to the dwarfsym */
struct dwarf_frame {
	const char *name;		/* DW_AT_name; NULL when no function covers the address */
	const char *linkage_name;	/* DW_AT_linkage_name (mangled), NULL when absent */
	const char *file;		/* NULL when unknown */
	int64_t line;
	int64_t column;
	int64_t decl_line;		/* where the function is declared, 0 when unknown */
};

/* DWARF of elf (not owned; must outlive the dwarfsym); NULL, errno ENODATA when it has none */
struct dwarfsym *dwarfsym__new(Elf *elf);
void dwarfsym__free(struct dwarfsym *d);
/* libdw's handle (to attach a supplementary .gnu_debugaltlink file) */
Dwarf *dwarfsym__dwarf(struct dwarfsym *d);
/*
 * frames of link-time address vaddr, innermost first; how many (at most max),
 * 0 when no compilation unit covers vaddr
 */
int dwarfsym__frames(struct dwarfsym *d, uint64_t vaddr, struct dwarf_frame *out, int max);

#endif /* CULPERT_DWARFSYM_H */
