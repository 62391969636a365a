/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The allocator part of the memory picture in memfmt's items (so that JSON
 * "allocator.glibc.arenas.0.top_bytes", the comment
 * "mem.end.allocator.glibc.arenas.0.top_bytes=..." and the metric
 * culpert_allocator_top_bytes{arena="0"} are one value) and as text.
 */
#ifndef CULPERT_ALLOCFMT_H
#define CULPERT_ALLOCFMT_H

#include <stdio.h>

#include "allocstate.h"
#include "memfmt.h"

/* the items of st (none when it was not read); 0 or -ENOMEM */
int allocfmt_items(struct mem_items *items, const struct alloc_state *st);
/* the allocator section of `stats`'s text; nothing when st was not read */
void allocfmt_text(FILE *f, const struct alloc_state *st);

#endif /* CULPERT_ALLOCFMT_H */
