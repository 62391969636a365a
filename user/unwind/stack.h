/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The call stack of a sample, from what the BPF side recorded. */
#ifndef CULPERT_STACK_H
#define CULPERT_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "culpert.h"

/* the open spans of a sample record, outermost first (e->span_depth of them) */
static inline const struct culpert_span_frame *event_spans(const struct culpert_alloc_event *e)
{
	return (const struct culpert_span_frame *)e->data;
}

/* the frame-pointer walk of a sample record (e->nr_frames of them) */
static inline const __u64 *event_frames(const struct culpert_alloc_event *e)
{
	return (const __u64 *)(e->data + e->span_depth * sizeof(struct culpert_span_frame));
}

/* the user stack copy of a DWARF sample (e->stack_len bytes): it takes the frames' place */
static inline const __u8 *event_stack(const struct culpert_alloc_event *e)
{
	return (const __u8 *)event_frames(e);
}

/* does a record of `size` bytes hold everything its header announces? */
bool event_complete(const struct culpert_alloc_event *e, size_t size);

/*
 * Return addresses, leaf first, the leaf being the allocator's caller
 * (allocator frames are never kept); at most max.  Returns the count.
 */
size_t stack_from_event(const struct culpert_alloc_event *e, uint64_t *out, size_t max);

#endif /* CULPERT_STACK_H */
