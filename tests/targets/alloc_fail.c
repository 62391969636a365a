// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocator calls that cannot succeed, between calls that do: each round
 * malloc((size_t)-1), calloc(2^33, 2^33) (n * size overflows) and
 * realloc(block, (size_t)-1) fail with NULL (the block stays allocated),
 * and good() allocates a 1000-byte block, kept to the end.
 * Prints "pid N ready", waits for SIGUSR1, runs, prints "failed F" (the
 * NULLs it got) and "total BYTES" (what the successful calls asked for, all
 * still live), and exits 0 without freeing them.
 *   alloc_fail [ROUNDS]        (default 3000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ready.h"

#define NOINLINE __attribute__((noipa))

/* volatile: the compiler may not know these calls fail and fold them */
static volatile size_t huge = SIZE_MAX, half = 1ULL << 33;

static NOINLINE void *bad_malloc(void)
{
	return malloc(huge);
}

static NOINLINE void *bad_calloc(void)
{
	return calloc(half, half);
}

static NOINLINE void *bad_realloc(void *p)
{
	return realloc(p, huge);
}

static NOINLINE void *good(void)
{
	return malloc(1000);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 3000, i, failed = 0;
	void **kept = calloc((size_t)(rounds > 0 ? rounds : 1), sizeof(*kept));

	if (!kept || rounds <= 0)
		return 1;
	ready_then_wait(stdout);
	for (i = 0; i < rounds; i++) {
		failed += !bad_malloc();
		failed += !bad_calloc();
		kept[i] = good();
		failed += !bad_realloc(kept[i]);
	}
	printf("failed %ld\ntotal %ld\n", failed, rounds * 1000);
	fflush(stdout);
	return 0;
}
