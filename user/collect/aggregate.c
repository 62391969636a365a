// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "hashtab.h"
#include "vec.h"

struct stack_ref {
	uint32_t off, n;
};

struct aggregate {
	size_t max_entries;
	struct agg_entry *entries;
	size_t n_entries, cap_entries;
	struct hashtab entry_ht;
	uint64_t *frames;		/* all stacks, back to back */
	size_t n_frames, cap_frames;
	struct stack_ref *stacks;	/* [0] is the empty stack */
	size_t n_stacks, cap_stacks;
	struct hashtab stack_ht;
	uint64_t folded;
};

double sample_weight(uint64_t size, uint64_t rate)
{
	if (rate <= 1)
		return 1.0;
	if (!size)
		return 0.0;
	/* -expm1(-x) = 1 - e^-x without cancellation when size << rate */
	return 1.0 / -expm1(-(double)size / (double)rate);
}

struct aggregate *aggregate__new(size_t max_entries)
{
	struct aggregate *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max_entries = max_entries ? max_entries : 1;
	if (vec_reserve(&a->stacks, &a->cap_stacks, 1, sizeof(*a->stacks))) {
		free(a);
		return NULL;
	}
	a->stacks[0] = (struct stack_ref){ 0, 0 };
	a->n_stacks = 1;
	return a;
}

void aggregate__free(struct aggregate *a)
{
	if (!a)
		return;
	free(a->entries);
	free(a->frames);
	free(a->stacks);
	hashtab__free(&a->entry_ht);
	hashtab__free(&a->stack_ht);
	free(a);
}

struct frames_key {
	const uint64_t *v;
	size_t n;
};

static bool stack_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct aggregate *a = ctx;
	const struct frames_key *k = key;
	const struct stack_ref *s = &a->stacks[idx];

	return s->n == k->n && !memcmp(&a->frames[s->off], k->v, k->n * sizeof(*k->v));
}

uint32_t aggregate__stack(struct aggregate *a, const uint64_t *frames, size_t n)
{
	struct frames_key k = { frames, n };
	uint64_t h;
	uint32_t idx;

	if (!n)
		return 0;
	h = hash_bytes(frames, n * sizeof(*frames), 0);
	if (hashtab__find(&a->stack_ht, h, &k, stack_eq, a, &idx))
		return idx;
	/* every key has a stack: as many stacks as keys is the bound */
	if (a->n_stacks > a->max_entries || a->n_frames + n > UINT32_MAX)
		return 0;
	if (vec_reserve(&a->stacks, &a->cap_stacks, a->n_stacks + 1, sizeof(*a->stacks)) ||
	    vec_reserve(&a->frames, &a->cap_frames, a->n_frames + n, sizeof(*a->frames)))
		return 0;
	idx = (uint32_t)a->n_stacks;
	if (hashtab__insert(&a->stack_ht, h, idx))
		return 0;
	memcpy(&a->frames[a->n_frames], frames, n * sizeof(*frames));
	a->stacks[a->n_stacks++] = (struct stack_ref){ (uint32_t)a->n_frames, (uint32_t)n };
	a->n_frames += n;
	return idx;
}

static bool key_eq(uint32_t idx, const void *key, void *ctx)
{
	return !memcmp(&((const struct aggregate *)ctx)->entries[idx].key, key,
		       sizeof(struct agg_key));
}

static struct agg_entry *lookup(struct aggregate *a, const struct agg_key *k, bool create)
{
	uint64_t h = hash_bytes(k, sizeof(*k), 0);
	uint32_t idx;
	struct agg_entry *e;

	if (hashtab__find(&a->entry_ht, h, k, key_eq, a, &idx))
		return &a->entries[idx];
	if (!create ||
	    vec_reserve(&a->entries, &a->cap_entries, a->n_entries + 1, sizeof(*a->entries)))
		return NULL;
	idx = (uint32_t)a->n_entries;
	if (hashtab__insert(&a->entry_ht, h, idx))
		return NULL;
	e = &a->entries[a->n_entries++];
	memset(e, 0, sizeof(*e));
	e->key = *k;
	return e;
}

static void account(struct agg_entry *e, uint64_t size, uint64_t rate)
{
	double w = sample_weight(size, rate);

	e->samples++;
	e->alloc_objects += w;
	e->alloc_space += w * (double)size;
}

int aggregate__add(struct aggregate *a, const struct agg_key *key, uint64_t size, uint64_t rate)
{
	struct agg_key k = *key;
	struct agg_entry *e;

	k.pad = 0;
	e = lookup(a, &k, a->n_entries < a->max_entries);
	if (!e)
		return a->n_entries < a->max_entries ? -ENOMEM : -ENOSPC;
	account(e, size, rate);
	return (int)(e - a->entries);
}

int aggregate__add_folded(struct aggregate *a, const struct agg_key *key, uint64_t size,
			  uint64_t rate)
{
	struct agg_key k = { .stack = 0, .tid = 0, .span = key->span };
	struct agg_entry *e;

	/* past the bound on purpose: one such key per span path, which the caller bounds */
	e = lookup(a, &k, true);
	if (!e)
		return -ENOMEM;
	a->folded++;
	account(e, size, rate);
	return (int)(e - a->entries);
}

const struct agg_entry *aggregate__entries(const struct aggregate *a, size_t *n)
{
	*n = a->n_entries;
	return a->entries;
}

const uint64_t *aggregate__stack_frames(const struct aggregate *a, uint32_t stack, size_t *n)
{
	if (stack >= a->n_stacks) {
		*n = 0;
		return NULL;
	}
	*n = a->stacks[stack].n;
	return a->frames ? &a->frames[a->stacks[stack].off] : NULL;
}

uint64_t aggregate__folded(const struct aggregate *a)
{
	return a->folded;
}
