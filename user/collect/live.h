/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --inuse: the sampled blocks still live, by sample id.  A block is
 * announced with its sample (which aggregate entry, size, weight, time),
 * and dropped when the ring buffer says it was freed or not tracked.  Those
 * records may be lost, so they only keep this table small: what is live is
 * what the kernel's live table holds, marked here at the end (and whenever
 * this table fills) with live__mark() and swept of the rest.  Bounded like
 * the BPF live table it mirrors.
 */
#ifndef CULPERT_LIVE_H
#define CULPERT_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct live;

struct live_block {
	uint64_t id;
	uint32_t entry;		/* aggregate entry index */
	bool tracked;		/* marked: the kernel's live table holds it */
	uint64_t size;
	double weight;		/* sample_weight(size, rate) */
	uint64_t ts_ns;		/* CLOCK_MONOTONIC at allocation */
};

struct live *live__new(size_t max_blocks);
void live__free(struct live *l);
/* a sampled allocation; 0, -ENOSPC when full, -ENOMEM */
int live__alloc(struct live *l, const struct live_block *b);
/* its return: tracked or not (failed allocation, full BPF table) */
void live__ret(struct live *l, uint64_t id, bool tracked);
/* its free */
void live__release(struct live *l, uint64_t id);
/* forget the blocks allocated before ts_ns (their frees may have gone unseen); how many */
size_t live__drop_before(struct live *l, uint64_t ts_ns);
/* the blocks; pointer valid until the next change */
const struct live_block *live__blocks(const struct live *l, size_t *n);
/* reconcile with the kernel's table: unmark all, mark each id it holds, sweep the unmarked */
void live__mark_begin(struct live *l);
bool live__mark(struct live *l, uint64_t id);	/* false: not here */
size_t live__sweep(struct live *l);		/* blocks dropped */
bool live__full(const struct live *l);

#endif /* CULPERT_LIVE_H */
