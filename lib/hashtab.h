/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An open-addressing index from 64-bit hashes to positions in the caller's
 * own array.  The caller keeps the entries (strings, locations, stacks) in
 * a plain vector and supplies equality; the table stores 12 bytes a slot.
 */
#ifndef CULPERT_HASHTAB_H
#define CULPERT_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashtab {
	uint64_t *hashes;
	uint32_t *slots;	/* entry index, UINT32_MAX when empty */
	size_t cap;		/* power of two */
	size_t len;
};

/* is entry `idx` of the caller's array equal to `key`? */
typedef bool (*hashtab_eq_fn)(uint32_t idx, const void *key, void *ctx);

/* find `key`; true and *idx set when present */
bool hashtab__find(const struct hashtab *h, uint64_t hash, const void *key, hashtab_eq_fn eq,
		   void *ctx, uint32_t *idx);
/* record that entry `idx` has `hash` (the caller checked it is new); 0 or -ENOMEM */
int hashtab__insert(struct hashtab *h, uint64_t hash, uint32_t idx);
void hashtab__free(struct hashtab *h);

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hash_u64(uint64_t x, uint64_t seed);

#endif /* CULPERT_HASHTAB_H */
