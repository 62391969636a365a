// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A library built without frame pointers, as Debian's are: nofp_mix()
 * computes and never allocates; built with -DALLOCATES, nofp_copy() calls
 * malloc, so a frame-pointer walk from the allocator goes through it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

unsigned long nofp_mix(const unsigned char *p, size_t n);
char *nofp_copy(const char *s, size_t n);

__attribute__((noinline)) unsigned long nofp_mix(const unsigned char *p, size_t n)
{
	unsigned long h = 0xcbf29ce484222325UL, g = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		h = (h ^ p[i]) * 0x100000001b3UL;
		g += h >> (i & 31);
	}
	return h ^ g;
}

#ifdef ALLOCATES
__attribute__((noinline)) char *nofp_copy(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}
#endif
