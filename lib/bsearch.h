/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Lower-bound search: the first element of a sorted sequence that does not
 * sort before a key.  Every table lookup here starts from it (an address
 * among mappings, symbols, ranges or FDEs; an entry among sorted blocks);
 * what the caller then checks (contains, equals, the one before) is its own.
 */
#ifndef CULPERT_BSEARCH_H
#define CULPERT_BSEARCH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The first i in [0, n) for which before(i, ctx) is false, n if none.
 * before must hold for a prefix of the indices and not after it (the
 * sequence is sorted).  Elements are named by index, so they may be read
 * through another array or from a file (ctx may note a failed read).
 */
static inline size_t lower_bound_at(size_t n, bool (*before)(size_t i, void *ctx), void *ctx)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (before(mid, ctx))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct lower_bound_array {
	const char *base;
	size_t size;
	const void *key;
	bool (*before)(const void *elem, const void *key);
};

static inline bool lower_bound_array_before(size_t i, void *ctx)
{
	const struct lower_bound_array *a = ctx;

	return a->before(a->base + i * a->size, a->key);
}

/*
 * The first of the n sorted elements of `size` bytes at base for which
 * before(elem, key) is false, n if none.  A before of "elem <= key" gives
 * the first element after key, so the one before it is the last at or
 * below key.
 */
static inline size_t lower_bound(const void *key, const void *base, size_t n, size_t size,
				 bool (*before)(const void *elem, const void *key))
{
	struct lower_bound_array a = { base, size, key, before };

	return lower_bound_at(n, lower_bound_array_before, &a);
}

#endif /* CULPERT_BSEARCH_H */
