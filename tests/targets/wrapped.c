// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocations through wrappers, as real C programs make them: a redis-style
 * zmalloc -> ztrymalloc_usable -> malloc (on the default wrapper list), and
 * a project's own proj_alloc -> malloc (not on it: --skip proj_alloc).
 *   dictAdd     24 MiB through zmalloc
 *   sdsnew       8 MiB through zmalloc
 *   load_users  12 MiB through proj_alloc
 *   load_items   4 MiB through proj_alloc
 *   direct       2 MiB straight from malloc
 * in 1 KiB blocks, freed as they come.  Prints "pid N ready", waits for
 * SIGUSR1, runs, prints "total FN BYTES" for each and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define MiB (1024UL * 1024)
#define BLOCK 1024UL

static void *volatile sink;

NOINLINE void *ztrymalloc_usable(size_t size)
{
	return malloc(size);
}

NOINLINE void *zmalloc(size_t size)
{
	void *p = ztrymalloc_usable(size);

	if (!p)
		abort();
	return p;
}

NOINLINE void *proj_alloc(size_t size)
{
	void *p = malloc(size);

	if (!p)
		abort();
	return p;
}

/* `total` bytes in BLOCK-byte calls of `alloc`, each freed at once, from the function it is in */
#define BLOCKS(alloc, total)                                            \
	do {                                                            \
		unsigned long done;                                     \
		for (done = 0; done < (total); done += BLOCK) {         \
			sink = alloc(BLOCK);                            \
			free(sink);                                     \
		}                                                       \
	} while (0)

NOINLINE void dictAdd(void) { BLOCKS(zmalloc, 24 * MiB); }
NOINLINE void sdsnew(void) { BLOCKS(zmalloc, 8 * MiB); }
NOINLINE void load_users(void) { BLOCKS(proj_alloc, 12 * MiB); }
NOINLINE void load_items(void) { BLOCKS(proj_alloc, 4 * MiB); }
NOINLINE void direct(void) { BLOCKS(malloc, 2 * MiB); }

int main(void)
{
	ready_then_wait(stdout);
	dictAdd();
	sdsnew();
	load_users();
	load_items();
	direct();
	printf("total dictAdd %lu\ntotal sdsnew %lu\ntotal load_users %lu\n"
	       "total load_items %lu\ntotal direct %lu\n", 24 * MiB, 8 * MiB, 12 * MiB, 4 * MiB,
	       2 * MiB);
	return 0;
}
