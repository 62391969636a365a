/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Samples merged as they arrive, keyed by (stack, thread, span chain):
 * memory grows with distinct keys, never with samples or time.  Each
 * sample is unbiased on arrival and the estimates summed (never the
 * other way round, see sample_weight()).
 */
#ifndef CULPERT_AGGREGATE_H
#define CULPERT_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

struct agg_key {
	uint32_t stack;		/* from aggregate__stack(); 0 is the empty stack */
	uint32_t tid;		/* 0 when not kept */
	uint32_t span;		/* span chain id, 0 outside any span */
	uint32_t pad;
};

struct agg_entry {
	struct agg_key key;
	uint64_t samples;
	double alloc_objects;	/* unbiased estimates */
	double alloc_space;
};

struct aggregate;

/*
 * How many allocations one sample of `size` bytes stands for under Poisson
 * sampling with mean interval `rate`: 1 / P(sampled) = 1 / (1 - e^(-size/rate)).
 * rate 1 means every allocation was recorded: weight 1.
 */
double sample_weight(uint64_t size, uint64_t rate);

/* at most max_entries keys (see aggregate__add_folded() for what goes beyond) */
struct aggregate *aggregate__new(size_t max_entries);
void aggregate__free(struct aggregate *a);
/* intern a stack (leaf first); its id, 0 for the empty stack or when full */
uint32_t aggregate__stack(struct aggregate *a, const uint64_t *frames, size_t n);
/*
 * Add one sample of `size` bytes.  Returns the entry's index, -ENOSPC (a
 * new key, the table is full) or -ENOMEM.
 */
int aggregate__add(struct aggregate *a, const struct agg_key *key, uint64_t size, uint64_t rate);
/*
 * The last resort when the table is full: add to the key with no stack and
 * no thread, keeping only key->span, so the totals stay right.  The entry's
 * index or -ENOMEM.
 */
int aggregate__add_folded(struct aggregate *a, const struct agg_key *key, uint64_t size,
			  uint64_t rate);
const struct agg_entry *aggregate__entries(const struct aggregate *a, size_t *n);
const uint64_t *aggregate__stack_frames(const struct aggregate *a, uint32_t stack, size_t *n);
/* samples added through aggregate__add_folded() */
uint64_t aggregate__folded(const struct aggregate *a);

#endif /* CULPERT_AGGREGATE_H */
