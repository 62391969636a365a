// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"

#define EMPTY UINT32_MAX

/* splitmix64 finaliser: cheap and mixes every input bit into every output bit */
uint64_t hash_u64(uint64_t x, uint64_t seed)
{
	x += seed + 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
	uint64_t w;

	for (; n >= 8; n -= 8, s += 8) {
		memcpy(&w, s, 8);
		h = hash_u64(h ^ w, 0);
	}
	w = 0;
	if (n)	/* s may be NULL when n is 0: memcpy must not see it */
		memcpy(&w, s, n);
	return hash_u64(h ^ w, n);
}

bool hashtab__find(const struct hashtab *h, uint64_t hash, const void *key, hashtab_eq_fn eq,
		   void *ctx, uint32_t *idx)
{
	size_t mask = h->cap - 1, i;

	if (!h->cap)
		return false;
	for (i = hash & mask; h->slots[i] != EMPTY; i = (i + 1) & mask) {
		if (h->hashes[i] == hash && eq(h->slots[i], key, ctx)) {
			*idx = h->slots[i];
			return true;
		}
	}
	return false;
}

static void put(struct hashtab *h, uint64_t hash, uint32_t idx)
{
	size_t mask = h->cap - 1, i;

	for (i = hash & mask; h->slots[i] != EMPTY; i = (i + 1) & mask)
		;
	h->hashes[i] = hash;
	h->slots[i] = idx;
}

static int grow(struct hashtab *h)
{
	struct hashtab n = { .cap = h->cap ? h->cap * 2 : 64 };
	size_t i;

	n.hashes = malloc(n.cap * sizeof(*n.hashes));
	n.slots = malloc(n.cap * sizeof(*n.slots));
	if (!n.hashes || !n.slots) {
		free(n.hashes);
		free(n.slots);
		return -ENOMEM;
	}
	memset(n.slots, 0xff, n.cap * sizeof(*n.slots));
	for (i = 0; i < h->cap; i++)
		if (h->slots[i] != EMPTY)
			put(&n, h->hashes[i], h->slots[i]);
	n.len = h->len;
	hashtab__free(h);
	*h = n;
	return 0;
}

int hashtab__insert(struct hashtab *h, uint64_t hash, uint32_t idx)
{
	/* keep the load under 3/4 so probe sequences stay short */
	if ((h->len + 1) * 4 > h->cap * 3) {
		int err = grow(h);

		if (err)
			return err;
	}
	put(h, hash, idx);
	h->len++;
	return 0;
}

void hashtab__free(struct hashtab *h)
{
	free(h->hashes);
	free(h->slots);
	memset(h, 0, sizeof(*h));
}
