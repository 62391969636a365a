/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Samples merged as they arrive, keyed by (stack, thread, span chain):
 * memory grows with distinct stacks, never with samples, requests or time.  Each
 * sample is unbiased on arrival and the estimates summed (never the
 * other way round, see sample_weight()).
 */
#ifndef CULPERT_AGGREGATE_H
#define CULPERT_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agg_key {
	uint32_t stack;		/* index of an interned stack; 0 is the empty stack */
	uint32_t tid;		/* 0 when not kept */
	uint32_t span;		/* span chain id, 0 outside any span */
	uint32_t pad;		/* 0 */
};

struct agg_entry {
	struct agg_key key;
	uint64_t samples;
	double alloc_objects;	/* unbiased estimates */
	double alloc_space;
	/* of those, from samples kept past the stack rate (agg_sample.thinned), and their path */
	double thinned_objects;
	double thinned_space;
	double thinned_var;	/* the estimated variance of alloc_space from thinning, bytes^2 */
	uint32_t path;
};

struct aggregate;

/*
 * How many allocations one sample of `size` bytes stands for under Poisson
 * sampling with mean interval `rate`: 1 / P(sampled) = 1 / (1 - e^(-size/rate)).
 * rate 1 means every allocation was recorded: weight 1.
 */
double sample_weight(uint64_t size, uint64_t rate);

/*
 * max_stacks bounds the distinct stacks kept, whatever else varies: the
 * keys with thread and span ids (one per request) get max_stacks entries
 * of their own, and then go on without them (coarsened); stacks past the
 * bound keep their leaf under a [folded] frame.  Memory stays O(max_stacks)
 * and the totals stay right.
 */
struct aggregate *aggregate__new(size_t max_stacks);
void aggregate__free(struct aggregate *a);

/* one sampled allocation, as the session knows it */
struct agg_sample {
	const uint64_t *frames;	/* leaf first */
	size_t n_frames;
	uint32_t tid;
	uint32_t chain;		/* span chain with the innermost span's ids; UINT32_MAX: none kept */
	uint32_t path;		/* the same chain without ids (span paths are few: always kept) */
	uint64_t size;
	uint64_t count;		/* identical samples this stands for; 0 means 1 */
	/*
	 * An in-process sampler weighed it (otel_memory): `objects` is the
	 * number of allocations it stands for, not sample_weight()'s
	 */
	bool weighted;
	double objects;
	/*
	 * Kept past the stack rate with a probability its weight is the inverse
	 * of: aggregate__rescale() may scale it with the others of its path
	 */
	bool thinned;
	/* then: the variance its thinning adds to the bytes it stands for, each (bytes^2) */
	double thin_var;
};

/*
 * Add it under the finest key that fits: (stack, thread, chain), else
 * (stack, path), else (leaf under [folded], path), else ([unknown stack],
 * path).  Returns the entry's index, or -ENOMEM.
 */
int aggregate__add_sample(struct aggregate *a, const struct agg_sample *s, uint64_t rate);
const struct agg_entry *aggregate__entries(const struct aggregate *a, size_t *n);
const uint64_t *aggregate__stack_frames(const struct aggregate *a, uint32_t stack, size_t *n);
/*
 * The indices of the n entries in the order of their keys: the stacks' frames
 * root first, then span chain and thread; the same entries give the same
 * order whatever order they came in.  Kept from one call to the next (only
 * the new entries are sorted); valid until the next sample.  NULL on ENOMEM.
 */
const uint32_t *aggregate__order(struct aggregate *a);
/*
 * In a walk of order[0..n) at i: what the entries a few places ahead will
 * read (entry, stack, frames) asked of the memory now.  The entries in key
 * order are scattered; read one after the other, each waits for memory.
 */
void aggregate__prefetch(const struct aggregate *a, const uint32_t *order, size_t n, size_t i);
/* the frames of every entry's stack, the empty stack counted as one */
size_t aggregate__entry_frames(const struct aggregate *a);
/* the frames of all distinct stacks, and how many stacks */
size_t aggregate__n_frames(const struct aggregate *a, size_t *n_stacks);
/* samples whose key lost its thread and span ids (the table of such keys was full) */
uint64_t aggregate__coarsened(const struct aggregate *a);
/* samples whose stack was cut to its leaf or lost (more distinct stacks than max_stacks) */
uint64_t aggregate__folded(const struct aggregate *a);
/*
 * Scale the thinned part of every entry of span path `path` by `factor`
 * (the census of the samples past the stack rate over the estimate the
 * kept ones make: docs/profile-format.md, "Throttling").  Returns that
 * part's bytes before scaling; factor 1 only sums them.
 */
double aggregate__rescale(struct aggregate *a, uint32_t path, double factor);
/*
 * No new stack from now on: the bound becomes what is held (memory
 * pressure); new stacks' samples go under [folded] leaves, which are
 * bounded by as many.
 */
void aggregate__freeze(struct aggregate *a);

#endif /* CULPERT_AGGREGATE_H */
