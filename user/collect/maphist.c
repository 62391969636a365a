// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bsearch.h"
#include "hashtab.h"
#include "maphist.h"
#include "procmaps.h"
#include "vec.h"

/*
 * Return addresses of user code never have bit 63 set (nor do the BPF
 * side's pseudo frames, small integers): a token is that bit and an index.
 */
#define TOKEN_BIT	(1ULL << 63)
#define MAX_TOKENS	(1U << 20)
/*
 * Appearances kept, and looked through for a sample older than the mapping
 * now at its address: samples are read within a second or so of being
 * taken, loads and unloads older than these no longer matter.
 */
#define MAX_APPEARANCES	1024

/* an address and the mapping (index into maps) it was seen in */
struct seen_addr {
	uint64_t addr;
	uint32_t map;
};

/* mapping `map` was made at ts_ns: the same library loaded again appears again */
struct appearance {
	uint64_t ts_ns;
	uint32_t map;
};

struct maphist {
	bool tracking;
	struct appearance *seen;	/* a ring of the last MAX_APPEARANCES */
	size_t n_seen;			/* ever recorded */
	struct procmap *maps;		/* copies, paths owned */
	size_t n_maps, cap_maps, max_maps;
	struct hashtab maps_ht;
	uint32_t *base;			/* the view before the first change, by address */
	size_t n_base;
	struct seen_addr *addrs;	/* an address's first meaning */
	size_t n_addrs, cap_addrs;
	struct hashtab addrs_ht;
	struct seen_addr *tokens;	/* later meanings */
	size_t n_tokens, cap_tokens;
	struct hashtab tokens_ht;
	uint64_t dropped;
};

struct maphist *maphist__new(size_t max_maps)
{
	struct maphist *h = calloc(1, sizeof(*h));

	if (h)
		h->max_maps = max_maps;
	return h;
}

void maphist__free(struct maphist *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->n_maps; i++)
		free(h->maps[i].path);
	free(h->maps);
	free(h->seen);
	free(h->base);
	free(h->addrs);
	free(h->tokens);
	hashtab__free(&h->maps_ht);
	hashtab__free(&h->addrs_ht);
	hashtab__free(&h->tokens_ht);
	free(h);
}

static uint64_t map_hash(const struct procmap *m)
{
	return hash_u64(m->start ^ (m->inode << 1), m->offset ^ m->end);
}

static bool map_eq(uint32_t idx, const void *key, void *ctx)
{
	return procmap__same(&((struct maphist *)ctx)->maps[idx], key);
}

/* the index of m's copy, added if new; -ENOSPC past max_maps, -ENOMEM */
static int64_t map_index(struct maphist *h, const struct procmap *m)
{
	struct procmap *c;
	uint32_t idx;

	if (hashtab__find(&h->maps_ht, map_hash(m), m, map_eq, h, &idx))
		return idx;
	if (h->n_maps >= h->max_maps)
		return -ENOSPC;
	if (vec_reserve(&h->maps, &h->cap_maps, h->n_maps + 1, sizeof(*h->maps)))
		return -ENOMEM;
	c = &h->maps[h->n_maps];
	*c = *m;
	c->path = strdup(m->path);
	if (!c->path || hashtab__insert(&h->maps_ht, map_hash(m), (uint32_t)h->n_maps)) {
		free(c->path);
		return -ENOMEM;
	}
	return (int64_t)h->n_maps++;
}

int maphist__seen(struct maphist *h, const struct procmap *m, uint64_t ts_ns)
{
	int64_t k;

	if (!m->executable || !procmap__is_file(m))
		return 0;
	if (!h->seen && !(h->seen = calloc(MAX_APPEARANCES, sizeof(*h->seen))))
		return -ENOMEM;
	k = map_index(h, m);
	if (k == -ENOSPC) {
		h->dropped++;
		return 0;
	}
	if (k < 0)
		return (int)k;
	h->seen[h->n_seen++ % MAX_APPEARANCES] = (struct appearance){ ts_ns, (uint32_t)k };
	return 0;
}

/*
 * The mapping that held frame - 1 at ts_ns: the latest appearance before
 * then that covers it; -1 if none is known.  Appearances are in the order
 * they were read, per CPU: not quite the order of their times.
 */
static int64_t at_time(const struct maphist *h, uint64_t frame, uint64_t ts_ns)
{
	size_t i, n = h->n_seen < MAX_APPEARANCES ? h->n_seen : MAX_APPEARANCES;
	const struct appearance *best = NULL;

	for (i = 0; i < n; i++) {
		const struct appearance *a = &h->seen[i];
		const struct procmap *m = &h->maps[a->map];

		if (a->ts_ns <= ts_ns && m->start <= frame - 1 && frame - 1 < m->end &&
		    (!best || a->ts_ns > best->ts_ns))
			best = a;
	}
	return best ? (int64_t)best->map : -1;
}

/* is some executable mapping of old missing from fresh? */
static bool lost_mapping(const struct procmaps *old, const struct procmaps *fresh)
{
	size_t i, j = 0;

	/* both sorted by start: one merge-like pass */
	for (i = 0; i < old->n; i++) {
		const struct procmap *o = &old->v[i];

		if (!o->executable || o->gone || !procmap__is_file(o))
			continue;
		while (j < fresh->n && fresh->v[j].start < o->start)
			j++;
		if (j == fresh->n || !procmap__same(&fresh->v[j], o))
			return true;
	}
	return false;
}

int maphist__refresh(struct maphist *h, const struct procmaps *old, const struct procmaps *fresh)
{
	if (h->tracking || !lost_mapping(old, fresh))
		return 0;
	return maphist__changing(h, old);
}

int maphist__changing(struct maphist *h, const struct procmaps *old)
{
	size_t i;
	int64_t k;

	if (h->tracking)
		return 0;
	/* what every address stored so far meant: the view it was read against */
	h->base = calloc(old->n ?: 1, sizeof(*h->base));
	if (!h->base)
		return -ENOMEM;
	for (i = 0; i < old->n; i++) {
		if (!old->v[i].executable || !procmap__is_file(&old->v[i]))
			continue;
		k = map_index(h, &old->v[i]);
		if (k == -ENOMEM)
			return -ENOMEM;
		if (k >= 0)
			h->base[h->n_base++] = (uint32_t)k;
	}
	h->tracking = true;
	return 0;
}

bool maphist__tracking(const struct maphist *h)
{
	return h->tracking;
}

/* the mapping of the pre-change view holding addr, or -1 */
struct base_search {
	const struct maphist *h;
	uint64_t addr;
};

/* mapping i of the view ends at or before the address */
static bool base_ends_by(size_t i, void *ctx)
{
	const struct base_search *s = ctx;

	return s->h->maps[s->h->base[i]].end <= s->addr;
}

static int64_t base_find(const struct maphist *h, uint64_t addr)
{
	struct base_search s = { h, addr };
	size_t i = lower_bound_at(h->n_base, base_ends_by, &s);

	return i < h->n_base && h->maps[h->base[i]].start <= addr ? (int64_t)h->base[i] : -1;
}

static bool addr_eq(uint32_t idx, const void *key, void *ctx)
{
	return ((struct maphist *)ctx)->addrs[idx].addr == *(const uint64_t *)key;
}

static bool token_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct seen_addr *a = &((struct maphist *)ctx)->tokens[idx], *b = key;

	return a->addr == b->addr && a->map == b->map;
}

/* remember that addr (first) meant mapping k; 0 or -ENOMEM */
static int add_addr(struct maphist *h, uint64_t addr, uint32_t k)
{
	if (vec_reserve(&h->addrs, &h->cap_addrs, h->n_addrs + 1, sizeof(*h->addrs)) ||
	    hashtab__insert(&h->addrs_ht, hash_u64(addr, 0), (uint32_t)h->n_addrs))
		return -ENOMEM;
	h->addrs[h->n_addrs++] = (struct seen_addr){ .addr = addr, .map = k };
	return 0;
}

/* the token for (addr, k), made if new; frame itself when none can be made */
static uint64_t token(struct maphist *h, uint64_t frame, uint32_t k)
{
	struct seen_addr key = { .addr = frame, .map = k };
	uint64_t hash = hash_u64(frame, k);
	uint32_t idx;

	if (hashtab__find(&h->tokens_ht, hash, &key, token_eq, h, &idx))
		return TOKEN_BIT | idx;
	if (h->n_tokens >= MAX_TOKENS ||
	    vec_reserve(&h->tokens, &h->cap_tokens, h->n_tokens + 1, sizeof(*h->tokens)) ||
	    hashtab__insert(&h->tokens_ht, hash, (uint32_t)h->n_tokens)) {
		h->dropped++;
		return frame;
	}
	h->tokens[h->n_tokens] = key;
	return TOKEN_BIT | h->n_tokens++;
}

uint64_t maphist__frame(struct maphist *h, const struct procmap *m, uint64_t frame,
			uint64_t ts_ns)
{
	int64_t k, first;
	uint32_t idx;

	if (!h->tracking || (frame & TOKEN_BIT))
		return frame;
	/* mapped after the sample was taken: what was there before it */
	k = !m || m->seen_ns > ts_ns ? at_time(h, frame, ts_ns) : -1;
	if (k < 0 && !m)
		return frame;
	if (k < 0)
		k = map_index(h, m);
	if (k < 0) {
		h->dropped++;
		return frame;
	}
	if (hashtab__find(&h->addrs_ht, hash_u64(frame, 0), &frame, addr_eq, h, &idx))
		first = h->addrs[idx].map;
	else {
		/* unseen since tracking began: before it, the address meant the base view's */
		first = base_find(h, frame - 1);
		if (first < 0)
			first = k;
		if (add_addr(h, frame, (uint32_t)first)) {
			h->dropped++;
			return frame;
		}
	}
	return first == k ? frame : token(h, frame, (uint32_t)k);
}

const struct procmap *maphist__resolve(const struct maphist *h, uint64_t stored, uint64_t *frame)
{
	uint32_t idx;
	int64_t k;

	*frame = stored;
	if (stored & TOKEN_BIT) {
		idx = (uint32_t)(stored & ~TOKEN_BIT);
		if (idx >= h->n_tokens)
			return NULL;
		*frame = h->tokens[idx].addr;
		return &h->maps[h->tokens[idx].map];
	}
	if (!h->tracking)
		return NULL;
	if (hashtab__find(&h->addrs_ht, hash_u64(stored, 0), &stored, addr_eq, (void *)h, &idx))
		return &h->maps[h->addrs[idx].map];
	k = base_find(h, stored - 1);
	return k >= 0 ? &h->maps[k] : NULL;
}

const struct procmap *maphist__mappings(const struct maphist *h, size_t *n)
{
	*n = h->n_maps;
	return h->maps;
}

uint64_t maphist__dropped(const struct maphist *h)
{
	return h->dropped;
}
