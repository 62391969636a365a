// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "aggregate.h"
#include "bsearch.h"
#include "culpert.h"
#include "hashtab.h"
#include "vec.h"

struct stack_ref {
	uint32_t off, n;
};

/* the keys an entry can have, finest first */
enum agg_level {
	LEVEL_FULL,	/* stack, thread, span chain with ids */
	LEVEL_PATH,	/* stack, span path */
	LEVEL_LEAF,	/* leaf under [folded], span path */
	LEVEL_NONE,	/* [unknown stack], span path */
	LEVEL__MAX,
};

struct aggregate {
	size_t max_stacks;
	size_t n_level[LEVEL__MAX];	/* entries of each kind */
	struct agg_entry *entries;
	size_t n_entries, cap_entries;
	struct hashtab entry_ht;
	uint64_t *frames;		/* all stacks, back to back */
	size_t n_frames, cap_frames;
	struct stack_ref *stacks;	/* [0] is the empty stack */
	size_t n_stacks, cap_stacks;
	struct hashtab stack_ht;
	size_t n_whole, n_leaves;	/* stacks interned whole, and [leaf, [folded]] ones */
	uint64_t coarsened, folded;
	size_t n_entry_frames;		/* the frames of every entry's stack, 1 for the empty one */
	uint32_t *order;		/* the first n_ordered entries by key (aggregate__order()) */
	size_t n_ordered, cap_order;
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

struct aggregate *aggregate__new(size_t max_stacks)
{
	struct aggregate *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max_stacks = max_stacks ? max_stacks : 1;
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
	free(a->order);
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

/*
 * Intern a stack (leaf first) of n > 0 frames; a new one only if may_add.
 * 0 with its index, -ENOSPC (new, not allowed) or -ENOMEM.
 */
static int intern_stack(struct aggregate *a, const uint64_t *frames, size_t n, bool may_add,
			uint32_t *out)
{
	struct frames_key k = { frames, n };
	uint64_t h;
	uint32_t idx;

	h = hash_bytes(frames, n * sizeof(*frames), 0);
	if (hashtab__find(&a->stack_ht, h, &k, stack_eq, a, out))
		return 0;
	if (!may_add || a->n_frames + n > UINT32_MAX)
		return -ENOSPC;
	if (vec_reserve(&a->stacks, &a->cap_stacks, a->n_stacks + 1, sizeof(*a->stacks)) ||
	    vec_reserve(&a->frames, &a->cap_frames, a->n_frames + n, sizeof(*a->frames)))
		return -ENOMEM;
	idx = (uint32_t)a->n_stacks;
	if (hashtab__insert(&a->stack_ht, h, idx))
		return -ENOMEM;
	memcpy(&a->frames[a->n_frames], frames, n * sizeof(*frames));
	a->stacks[a->n_stacks++] = (struct stack_ref){ (uint32_t)a->n_frames, (uint32_t)n };
	a->n_frames += n;
	*out = idx;
	return 0;
}

/* the whole stack, within the bound of max_stacks distinct ones; 0, -ENOSPC or -ENOMEM */
static int whole_stack(struct aggregate *a, const struct agg_sample *s, uint32_t *out)
{
	size_t before = a->n_stacks;
	int err;

	*out = 0;
	if (!s->n_frames)
		return 0;
	err = intern_stack(a, s->frames, s->n_frames, a->n_whole < a->max_stacks, out);
	a->n_whole += a->n_stacks > before;
	return err;
}

/* the leaf under a [folded] frame: a callsite each, with a bound of its own */
static int leaf_stack(struct aggregate *a, const struct agg_sample *s, uint32_t *out)
{
	uint64_t leaf[2] = { s->frames[0], CULPERT_FRAME_FOLDED };
	size_t before = a->n_stacks;
	int err;

	err = intern_stack(a, leaf, 2, a->n_leaves < a->max_stacks, out);
	a->n_leaves += a->n_stacks > before;
	return err;
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
	a->n_entry_frames += a->stacks[k->stack].n ?: 1;
	return e;
}

static void account(struct agg_entry *e, const struct agg_sample *s, uint64_t rate)
{
	uint64_t count = s->count ?: 1;
	double w = (s->weighted ? s->objects : sample_weight(s->size, rate)) * (double)count;

	e->samples += count;
	e->alloc_objects += w;
	e->alloc_space += w * (double)s->size;
	e->path = s->path;
	if (s->thinned) {
		e->thinned_objects += w;
		e->thinned_space += w * (double)s->size;
		e->thinned_var += s->thin_var * (double)count;
	}
}

double aggregate__rescale(struct aggregate *a, uint32_t path, double factor)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < a->n_entries; i++) {
		struct agg_entry *e = &a->entries[i];

		if (e->path != path || !e->thinned_space)
			continue;
		sum += e->thinned_space;
		if (factor == 1)
			continue;
		e->alloc_objects += e->thinned_objects * (factor - 1);
		e->alloc_space += e->thinned_space * (factor - 1);
		e->thinned_objects *= factor;
		e->thinned_space *= factor;
		e->thinned_var *= factor * factor;
	}
	return sum;
}

/* the entry of key k, created if its level has room; NULL if not; -ENOMEM in *err */
static struct agg_entry *entry_at(struct aggregate *a, struct agg_key k, enum agg_level level,
				  int *err)
{
	/* [unknown stack] past the bound on purpose: one per span path, and those are few */
	bool room = level == LEVEL_NONE || a->n_level[level] < a->max_stacks;
	size_t before = a->n_entries;
	struct agg_entry *e;

	k.pad = 0;
	e = lookup(a, &k, room);
	if (!e && room)
		*err = -ENOMEM;
	a->n_level[level] += a->n_entries > before;
	return e;
}

int aggregate__add_sample(struct aggregate *a, const struct agg_sample *s, uint64_t rate)
{
	struct agg_key k = { .tid = 0, .span = s->path };
	struct agg_entry *e = NULL;
	uint32_t stack;
	int err, whole;

	whole = whole_stack(a, s, &stack);
	if (whole == -ENOMEM)
		return whole;
	err = 0;
	if (!whole && s->chain != UINT32_MAX)
		e = entry_at(a, (struct agg_key){ .stack = stack, .tid = s->tid, .span = s->chain },
			     LEVEL_FULL, &err);
	if (!e && !err && !whole) {
		k.stack = stack;
		e = entry_at(a, k, LEVEL_PATH, &err);
		/* a sample without a thread (throttled ones) had nothing to drop */
		a->coarsened += e != NULL && s->tid;
	}
	if (!e && !err && s->n_frames) {
		err = leaf_stack(a, s, &k.stack);
		if (err == -ENOMEM)
			return err;
		e = err ? NULL : entry_at(a, k, LEVEL_LEAF, &err);
		a->folded += e != NULL;
	}
	if (!e && err != -ENOMEM) {
		err = 0;
		k.stack = 0;
		e = entry_at(a, k, LEVEL_NONE, &err);
		a->folded += e != NULL && s->n_frames;
	}
	if (!e)
		return -ENOMEM;
	account(e, s, rate);
	return (int)(e - a->entries);
}

const struct agg_entry *aggregate__entries(const struct aggregate *a, size_t *n)
{
	*n = a->n_entries;
	return a->entries;
}

/*
 * Root first: callers group together, and the order is the frames' own,
 * whatever order the samples came in; then shorter stacks, span chain,
 * thread.  Keys are distinct: no two entries compare equal.
 */
static int entry_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct aggregate *a = ctx;
	const struct agg_key *x = &a->entries[*(const uint32_t *)pa].key;
	const struct agg_key *y = &a->entries[*(const uint32_t *)pb].key;
	const struct stack_ref *sx = &a->stacks[x->stack], *sy = &a->stacks[y->stack];
	const uint64_t *fx = a->frames + sx->off + sx->n, *fy = a->frames + sy->off + sy->n;
	uint32_t i, n = sx->n < sy->n ? sx->n : sy->n;

	for (i = 1; i <= n && x->stack != y->stack; i++)
		if (fx[-(int64_t)i] != fy[-(int64_t)i])
			return fx[-(int64_t)i] < fy[-(int64_t)i] ? -1 : 1;
	if (sx->n != sy->n)
		return sx->n < sy->n ? -1 : 1;
	if (x->span != y->span)
		return x->span < y->span ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

struct order_key {
	struct aggregate *a;
	uint32_t idx;
};

static bool ordered_before(size_t i, void *ctx)
{
	struct order_key *k = ctx;

	return entry_cmp(&k->a->order[i], &k->idx, k->a) < 0;
}

/*
 * The entries added since the last call, sorted, then put in place from
 * the last one down: a binary search each among those already ordered,
 * whose runs move up once.  A profile of a steady program costs no sort.
 */
const uint32_t *aggregate__order(struct aggregate *a)
{
	size_t old = a->n_ordered, n = a->n_entries, i, j, at;
	struct order_key k = { .a = a };
	uint32_t *add;

	/* one slot at least: NULL says ENOMEM, an empty aggregate has an order too */
	if (old == n && a->order)
		return a->order;
	if (vec_reserve(&a->order, &a->cap_order, 2 * n - old ?: 1, sizeof(*a->order)))
		return NULL;
	/* the new ones sorted past the end: n .. 2n - old */
	add = a->order + n;
	for (i = 0; i < n - old; i++)
		add[i] = (uint32_t)(old + i);
	qsort_r(add, n - old, sizeof(*add), entry_cmp, a);
	for (j = n - old, at = n; j > 0; j--) {
		k.idx = add[j - 1];
		i = lower_bound_at(old, ordered_before, &k);
		at -= old - i;
		memmove(&a->order[at], &a->order[i], (old - i) * sizeof(*a->order));
		a->order[--at] = k.idx;
		old = i;
	}
	a->n_ordered = n;
	return a->order;
}

/* entries ahead a step brings in: one step's misses are over before the next reads them */
#define AHEAD 8

void aggregate__prefetch(const struct aggregate *a, const uint32_t *order, size_t n, size_t i)
{
	const struct stack_ref *s;
	const uint64_t *f;
	uint32_t k;

	if (i + 3 * AHEAD < n) {
		__builtin_prefetch(&a->entries[order[i + 3 * AHEAD]]);
		__builtin_prefetch((const char *)&a->entries[order[i + 3 * AHEAD]] + 64);
	}
	if (i + 2 * AHEAD < n)
		__builtin_prefetch(&a->stacks[a->entries[order[i + 2 * AHEAD]].key.stack]);
	if (i + AHEAD >= n)
		return;
	s = &a->stacks[a->entries[order[i + AHEAD]].key.stack];
	f = a->frames + s->off;
	/* a cache line holds 8 frames */
	for (k = 0; k < s->n; k += 8)
		__builtin_prefetch(&f[k]);
	if (s->n)
		__builtin_prefetch(&f[s->n - 1]);
}

size_t aggregate__entry_frames(const struct aggregate *a)
{
	return a->n_entry_frames;
}

size_t aggregate__n_frames(const struct aggregate *a, size_t *n_stacks)
{
	*n_stacks = a->n_stacks;
	return a->n_frames;
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

uint64_t aggregate__coarsened(const struct aggregate *a)
{
	return a->coarsened;
}

uint64_t aggregate__folded(const struct aggregate *a)
{
	return a->folded;
}

void aggregate__freeze(struct aggregate *a)
{
	size_t held = a->n_whole > a->n_leaves ? a->n_whole : a->n_leaves;

	/* at least one, so that a target frozen before its first sample keeps one stack */
	if (held < a->max_stacks)
		a->max_stacks = held ? held : 1;
}
