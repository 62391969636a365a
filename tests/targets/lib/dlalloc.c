// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The libraries dlopen_cycles loads and unloads: all of the target's
 * allocations happen here, so every sample's leaf is in an object that is
 * mapped only part of the time.  Built twice, as libdlalloc_a.so and
 * libdlalloc_b.so (VARIANT a or b): the same size, so the dynamic linker
 * puts one where the other was, and a sample's address alone cannot tell
 * which it came from.
 */
#include <stdlib.h>

#define CAT(a, b) a##b
#define NAME(a, b) CAT(a, b)
/* the leaf of every sample: blocks_a or blocks_b */
#define BLOCKS NAME(blocks_, VARIANT)

static volatile unsigned long sink;

__attribute__((noipa)) unsigned long BLOCKS(unsigned long total)
{
	unsigned long done;

	for (done = 0; done < total; done += 4096) {
		char *p = malloc(4096);

		p[0] = (char)done;
		sink += (unsigned long)p[0];
		free(p);
	}
	return done;
}

/* total bytes in 4 KiB blocks, each freed at once; returns the bytes allocated */
unsigned long dl_alloc(unsigned long total)
{
	return BLOCKS(total);
}
