// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A library sampler_late opens after the takeover (tests/targets/sampler_late.c):
 * its allocations are seen only if its GOT was taken over when it was opened.
 */
#include <stdlib.h>

void late_plugin_alloc(unsigned long *bytes, unsigned long *calls);

__attribute__((noinline)) void late_plugin_alloc(unsigned long *bytes, unsigned long *calls)
{
	void *volatile p;
	int i;

	for (i = 0; i < 100; i++) {
		size_t n = 33 + (size_t)(i % 7);

		p = malloc(n);
		if (p) {
			*bytes += n;
			*calls += 1;
		}
		free(p);
	}
}
