// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Frame-pointer code that allocates, beside a library built without frame
 * pointers (tests/targets/lib/nofp.c) that it calls: alloc_beside links
 * libnofp_pure.so, which never allocates; alloc_beside_alloc links
 * libnofp_alloc.so and allocates through its nofp_copy() too;
 * alloc_beside_unused links libnofp_alloc.so but calls only its
 * nofp_mix(), never the function that allocates.  Prints
 * "pid N ready", waits for SIGUSR1, makes N allocations (default 20000),
 * prints "done" and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ready.h"

unsigned long nofp_mix(const unsigned char *p, size_t n);
char *nofp_copy(const char *s, size_t n);

static volatile unsigned long sink;

static __attribute__((noinline)) void work(long n)
{
	static const char text[] = "frame pointers beside a library without them";

	for (long i = 0; i < n; i++) {
		char *p = malloc(256);

		memcpy(p, text, sizeof(text));
		sink += nofp_mix((const unsigned char *)p, sizeof(text));
		free(p);
#ifdef ALLOCATING_LIB
		p = nofp_copy(text, sizeof(text) - 1);
		sink += (unsigned long)p;
		free(p);
#endif
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;

	ready_then_wait(stdout);
	work(n);
	printf("done\n");
	fflush(stdout);
	return 0;
}
