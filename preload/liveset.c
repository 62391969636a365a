// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The bounded, lock-free set of sampled pointers whose free must fire
 * otel_memory:free.  Every free asks it while it is not empty, so the
 * question must be cheap for the common answer, "no":
 *
 *  - a 16 KiB filter of saturating 8-bit counters, one per hash, answers
 *    most of them from a line that stays in cache;
 *  - buckets of one cache line, seven pointers and a count of this
 *    bucket's pointers stored in the next buckets when it was full, hold
 *    the pointers.  A slot goes back to 0 on removal (no tombstones), as
 *    a lookup scans whole buckets rather than stopping at an empty slot.
 *
 * Inserts and removals are compare-and-swaps on one word, safe in signal
 * handlers and across threads.  A pointer is inserted and removed by the
 * program's own order of malloc and free (a block is never freed before
 * it was allocated), so the insert of a pointer is always visible to its
 * removal and no pointer is in the set twice.  A full neighbourhood
 * refuses the insert: the caller counts it.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "sampler_internal.h"

#define SLOTS		7
#define NEIGHBOURS	4		/* buckets a pointer may land in, its own first */
#define FILTER_BITS	14

struct bucket {
	uintptr_t slot[SLOTS];
	uintptr_t spilled;		/* pointers of this bucket stored in the next ones */
};

static struct bucket *buckets;
static uintptr_t bucket_mask;
static uint8_t filter[1U << FILTER_BITS] __attribute__((aligned(64)));

/* written on sampled calls only */
struct sampler_live sampler_live;

static uint64_t hash(uintptr_t p)
{
	/* allocators align blocks to 8 or 16: the low bits carry nothing */
	return (uint64_t)(p >> 3) * 0x9e3779b97f4a7c15ULL;
}

static uintptr_t home_of(uint64_t h)
{
	return (uintptr_t)(h >> 32) & bucket_mask;
}

static uint8_t *filter_of(uint64_t h)
{
	return &filter[h & ((1U << FILTER_BITS) - 1)];
}

/* a count of 255 sticks: it only costs lookups, never a wrong answer */
static void filter_add(uint8_t *f, int d)
{
	uint8_t v = __atomic_load_n(f, __ATOMIC_RELAXED);

	do {
		if (v == 255)
			return;
	} while (!__atomic_compare_exchange_n(f, &v, (uint8_t)(v + d), 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

int liveset_init(size_t max_entries)
{
	size_t n = 1;
	void *m;

	while (n * SLOTS < max_entries)
		n <<= 1;
	/* anonymous memory costs nothing until a bucket is used */
	m = mmap(NULL, n * sizeof(struct bucket), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	bucket_mask = n - 1;
	__atomic_store_n(&buckets, (struct bucket *)m, __ATOMIC_RELEASE);
	return 0;
}

static int claim(struct bucket *b, uintptr_t p)
{
	int i;

	for (i = 0; i < SLOTS; i++) {
		uintptr_t v = __atomic_load_n(&b->slot[i], __ATOMIC_RELAXED);

		if (!v && __atomic_compare_exchange_n(&b->slot[i], &v, p, 0, __ATOMIC_ACQ_REL,
						      __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

static int release(struct bucket *b, uintptr_t p)
{
	int i;

	for (i = 0; i < SLOTS; i++) {
		uintptr_t v = p;

		if (__atomic_load_n(&b->slot[i], __ATOMIC_RELAXED) == p &&
		    __atomic_compare_exchange_n(&b->slot[i], &v, 0, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

int liveset_insert(uintptr_t p)
{
	struct bucket *tab = __atomic_load_n(&buckets, __ATOMIC_ACQUIRE);
	uint64_t h = hash(p);
	uintptr_t home = home_of(h), i;

	if (!tab || !p)
		return 0;
	/* counted first: a lookup that misses the home bucket then knows to go on */
	filter_add(filter_of(h), 1);
	__atomic_fetch_add(&sampler_live.n, 1, __ATOMIC_RELAXED);
	if (claim(&tab[home], p))
		return 1;
	__atomic_fetch_add(&tab[home].spilled, 1, __ATOMIC_RELAXED);
	for (i = 1; i < NEIGHBOURS; i++)
		if (claim(&tab[(home + i) & bucket_mask], p))
			return 1;
	__atomic_fetch_sub(&tab[home].spilled, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&sampler_live.n, 1, __ATOMIC_RELAXED);
	filter_add(filter_of(h), -1);
	return 0;
}

int liveset_remove(uintptr_t p)
{
	struct bucket *tab = __atomic_load_n(&buckets, __ATOMIC_ACQUIRE);
	uint64_t h = hash(p);
	uintptr_t home = home_of(h), i;
	int found = 0;

	if (!tab || !__atomic_load_n(filter_of(h), __ATOMIC_RELAXED))
		return 0;
	if (release(&tab[home], p)) {
		found = 1;
	} else if (__atomic_load_n(&tab[home].spilled, __ATOMIC_RELAXED)) {
		for (i = 1; i < NEIGHBOURS && !found; i++)
			found = release(&tab[(home + i) & bucket_mask], p);
		if (found)
			__atomic_fetch_sub(&tab[home].spilled, 1, __ATOMIC_RELAXED);
	}
	if (!found)
		return 0;
	filter_add(filter_of(h), -1);
	__atomic_fetch_sub(&sampler_live.n, 1, __ATOMIC_RELAXED);
	return 1;
}

/*
 * Racing inserts of calls still under way are fine: a pointer left over
 * costs a lookup on free, and its free fires only if a profiler listens.
 * Buckets never touched read the zero page: no memory is faulted in.
 */
void liveset_clear(void)
{
	struct bucket *tab = __atomic_load_n(&buckets, __ATOMIC_ACQUIRE);
	uintptr_t b;
	int i;

	if (!tab)
		return;
	for (b = 0; b <= bucket_mask && __atomic_load_n(&sampler_live.n, __ATOMIC_RELAXED); b++)
		for (i = 0; i < SLOTS; i++) {
			uintptr_t v = __atomic_load_n(&tab[b].slot[i], __ATOMIC_RELAXED);

			if (v)
				liveset_remove(v);
		}
}
