/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The unwinding auto chooses, remembered by what decides it: the files a
 * process maps executable.  Judging them reads thousands of function
 * prologues and every object's symbols (docs/agent.md, "Many targets");
 * the agent's targets are mostly copies of a few programs on the same
 * libraries.  A file is known by device, inode, size and modification
 * time, so a rebuilt or replaced one is judged again.
 */
#ifndef CULPERT_UNWIND_CHOICE_H
#define CULPERT_UNWIND_CHOICE_H

#include <stddef.h>

#include "session.h"

struct unwind_choices;

/* at most max choices remembered, the oldest forgotten first; NULL and errno on failure */
struct unwind_choices *unwind_choices__new(size_t max);
void unwind_choices__free(struct unwind_choices *c);
/*
 * session_unwind__choose(), remembered in c when want is auto and every
 * executable file of maps can be identified; c NULL: not remembered.
 * Safe to call from several threads.
 */
int unwind_choices__choose(struct unwind_choices *c, const struct target *t,
			   const struct procmaps *maps, struct objcache *objs,
			   enum session_unwind want, enum session_unwind *out, char *why,
			   size_t len);
/* choices computed and choices remembered, since c was made */
void unwind_choices__counts(struct unwind_choices *c, size_t *judged, size_t *reused);

#endif /* CULPERT_UNWIND_CHOICE_H */
