// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A storm of large allocations: storm() does N malloc(1 MiB)/free pairs, so
 * at the default rate nearly every call is sampled.  Prints "pid N ready",
 * waits for SIGUSR1, runs, prints "total storm BYTES CALLS" and
 * "calls_per_sec X" and exits.
 *   alloc_storm [N]    (default 200000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define MiB (1024UL * 1024)

static volatile unsigned long sink;

static NOINLINE void storm(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(MiB);

		sink += (unsigned long)p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct timespec a, b;
	double secs;

	ready_then_wait(stdout);
	clock_gettime(CLOCK_MONOTONIC, &a);
	storm(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("total storm %lu %ld\n", (unsigned long)n * MiB, n);
	printf("calls_per_sec %.0f\n", secs > 0 ? (double)n / secs : 0);
	return 0;
}
