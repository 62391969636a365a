// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The memory budget of reading one profile (pprof.h). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>

#include "pprof.h"
#include "units.h"
#include "vec.h"

size_t pprof_budget_for(size_t input)
{
	unsigned long long m = (unsigned long long)input * PPROF_MEM_RATIO;

	if (input > PPROF_MEM_CEILING / PPROF_MEM_RATIO || m > PPROF_MEM_CEILING)
		m = PPROF_MEM_CEILING;
	if (m < PPROF_MEM_FLOOR)
		m = PPROF_MEM_FLOOR;
	return (size_t)m;
}

int pprof_budget__charge(struct pprof_budget *b, size_t bytes)
{
	if (!b)
		return 0;
	if (bytes > b->max || b->used > b->max - bytes) {
		b->exceeded = true;
		return -E2BIG;
	}
	b->used += bytes;
	return 0;
}

int pprof_budget__reserve(struct pprof_budget *b, void *ptrp, size_t *cap, size_t need,
			  size_t elem)
{
	size_t before = *cap, grown;
	int ret;

	if (need <= *cap)
		return 0;
	/* charge what vec_reserve() is about to take before it takes it */
	grown = before ? before : 16;
	while (grown < need && grown <= SIZE_MAX / 2)
		grown *= 2;
	if (grown > SIZE_MAX / elem)
		return -ENOMEM;
	ret = pprof_budget__charge(b, (grown - before) * elem);
	if (ret)
		return ret;
	return vec_reserve(ptrp, cap, need, elem);
}

int pprof_budget__insert(struct pprof_budget *b, struct hashtab *h, uint64_t hash, uint32_t idx)
{
	/* hashtab.c doubles at 3/4 load, 12 bytes a slot */
	if ((h->len + 1) * 4 > h->cap * 3) {
		int ret = pprof_budget__charge(b, (h->cap ? h->cap : 64) * 12);

		if (ret)
			return ret;
	}
	return hashtab__insert(h, hash, idx);
}

/*
 * The bytes the process's heap holds: glibc's in-use bytes from the arenas
 * and the blocks it mmapped on their own; under AddressSanitizer, whose
 * allocator replaces glibc's (mallinfo2 then sees nothing), ASan's own count
 */
#ifdef __SANITIZE_ADDRESS__
/* ASan's public interface (sanitizer/allocator_interface.h, which gcc does not install) */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

static size_t heap_in_use(void)
{
#ifdef __SANITIZE_ADDRESS__
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
#endif
}

int pprof_budget__check_heap(struct pprof_budget *b)
{
	if (!b || !b->max)
		return 0;
	if (heap_in_use() <= b->max)
		return 0;
	b->exceeded = true;
	return -E2BIG;
}

void pprof_budget__explain(const struct pprof_budget *b, const char *doing, char *buf,
			   size_t len)
{
	char m[32], in[32];

	format_bytes(m, sizeof(m), (double)b->max);
	format_bytes(in, sizeof(in), (double)b->input);
	if (b->input)
		snprintf(buf, len, "%s it takes more than %s of memory (the limit for a %s file: "
			 "%dx its size, at least %llu MiB, at most %llu MiB); "
			 "CULPERT_MAX_MEMORY=SIZE sets another limit", doing, m, in, PPROF_MEM_RATIO,
			 PPROF_MEM_FLOOR >> 20, PPROF_MEM_CEILING >> 20);
	else
		snprintf(buf, len, "%s it takes more than the %s of memory CULPERT_MAX_MEMORY "
			 "allows", doing, m);
}
