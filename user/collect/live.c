// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "live.h"

#define EMPTY UINT32_MAX

/*
 * Blocks sit in a dense array (removal moves the last one into the hole);
 * an open-addressing table maps ids to positions.  Deletion shifts the
 * following entries of the probe run back, so no tombstones build up over
 * a long capture.  Both grow as blocks come, up to what max needs: the
 * agent holds a table per target, most of them far from full.
 */
struct live {
	size_t max;
	struct live_block *v;
	size_t n, cap_v;
	uint32_t *slots;	/* position in v, EMPTY when free */
	size_t cap;		/* power of two, > 2 * cap_v */
};

/* room for cap_v blocks: a bigger array and table, every block's slot found again */
static int grow(struct live *l, size_t cap_v)
{
	struct live_block *v = realloc(l->v, cap_v * sizeof(*v));
	size_t cap, i, j;
	uint32_t *slots;

	if (!v)
		return -ENOMEM;
	l->v = v;
	for (cap = 16; cap <= 2 * cap_v; cap *= 2)
		;
	slots = malloc(cap * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, cap * sizeof(*slots));
	free(l->slots);
	l->slots = slots;
	l->cap = cap;
	l->cap_v = cap_v;
	for (i = 0; i < l->n; i++) {
		for (j = hash_u64(l->v[i].id, 0) & (cap - 1); slots[j] != EMPTY; j = (j + 1) & (cap - 1))
			;
		slots[j] = (uint32_t)i;
	}
	return 0;
}

struct live *live__new(size_t max_blocks)
{
	struct live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->max = max_blocks ? max_blocks : 1;
	/* small at first: grow() doubles, and an idle target never needs more */
	if (grow(l, l->max < 64 ? l->max : 64)) {
		live__free(l);
		return NULL;
	}
	return l;
}

void live__free(struct live *l)
{
	if (!l)
		return;
	free(l->v);
	free(l->slots);
	free(l);
}

static size_t home(const struct live *l, uint64_t id)
{
	return hash_u64(id, 0) & (l->cap - 1);
}

/* the slot holding id, or the empty slot where it would go */
static size_t find(const struct live *l, uint64_t id)
{
	size_t i = home(l, id);

	while (l->slots[i] != EMPTY && l->v[l->slots[i]].id != id)
		i = (i + 1) & (l->cap - 1);
	return i;
}

int live__alloc(struct live *l, const struct live_block *b)
{
	size_t i = find(l, b->id);

	if (l->slots[i] != EMPTY)
		return 0;
	if (l->n >= l->max)
		return -ENOSPC;
	if (l->n >= l->cap_v) {
		if (grow(l, l->cap_v * 2 < l->max ? l->cap_v * 2 : l->max))
			return -ENOMEM;
		i = find(l, b->id);
	}
	l->v[l->n] = *b;
	l->slots[i] = (uint32_t)l->n++;
	return 0;
}

void live__ret(struct live *l, uint64_t id, bool tracked)
{
	size_t i = find(l, id);

	if (l->slots[i] == EMPTY)
		return;
	if (tracked)
		l->v[l->slots[i]].tracked = true;
	else
		live__release(l, id);
}

static void remove_slot(struct live *l, size_t i)
{
	size_t mask = l->cap - 1, j = i, k;

	/* backward-shift deletion: pull later members of the run into the hole */
	l->slots[i] = EMPTY;
	for (;;) {
		j = (j + 1) & mask;
		if (l->slots[j] == EMPTY)
			return;
		k = home(l, l->v[l->slots[j]].id);
		/* may the entry at j move to i?  Only if its home is not within (i, j] */
		if ((i <= j) ? (k <= i || k > j) : (k <= i && k > j)) {
			l->slots[i] = l->slots[j];
			l->slots[j] = EMPTY;
			i = j;
		}
	}
}

void live__release(struct live *l, uint64_t id)
{
	size_t i = find(l, id), last;
	uint32_t pos;

	if (l->slots[i] == EMPTY)
		return;
	pos = l->slots[i];
	remove_slot(l, i);
	last = --l->n;
	if (pos != last) {
		/* the last block fills the hole; its slot follows it */
		l->v[pos] = l->v[last];
		l->slots[find(l, l->v[pos].id)] = pos;
	}
}

void live__mark_begin(struct live *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		l->v[i].tracked = false;
}

bool live__mark(struct live *l, uint64_t id)
{
	size_t i = find(l, id);

	if (l->slots[i] == EMPTY)
		return false;
	l->v[l->slots[i]].tracked = true;
	return true;
}

size_t live__sweep(struct live *l)
{
	size_t i = 0, gone = 0;

	while (i < l->n) {
		if (!l->v[i].tracked) {
			live__release(l, l->v[i].id);
			gone++;
		} else {
			i++;
		}
	}
	return gone;
}

bool live__full(const struct live *l)
{
	return l->n >= l->max;
}

size_t live__drop_before(struct live *l, uint64_t ts_ns)
{
	size_t i = 0, dropped = 0;

	/* live__release() moves the last block into the hole: look at i again */
	while (i < l->n) {
		if (l->v[i].ts_ns < ts_ns) {
			live__release(l, l->v[i].id);
			dropped++;
		} else {
			i++;
		}
	}
	return dropped;
}

const struct live_block *live__blocks(const struct live *l, size_t *n)
{
	*n = l->n;
	return l->v;
}
