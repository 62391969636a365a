// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Frees everything it allocates, late: hold() allocates N blocks of 64
 * bytes, then drop() frees them all.  Under a profiler whose ring buffer is
 * full by the time the frees come, their records are lost; the live heap
 * must still be empty.  Prints "pid N ready", waits for SIGUSR1, runs,
 * prints "total hold BYTES 0" and exits.
 *   free_later [N]    (default 20000)
 */
#include <stdio.h>
#include <stdlib.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))

static NOINLINE void hold(void **p, long n)
{
	for (long i = 0; i < n; i++)
		p[i] = malloc(64);
}

static NOINLINE void drop(void **p, long n)
{
	for (long i = 0; i < n; i++)
		free(p[i]);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	void **p = calloc((size_t)n, sizeof(*p));

	if (!p)
		return 1;
	ready_then_wait(stdout);
	hold(p, n);
	drop(p, n);
	printf("total hold %ld 0\n", 64 * n);
	free(p);
	return 0;
}
