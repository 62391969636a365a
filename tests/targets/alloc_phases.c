// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Two functions allocating at known, different rates, one after the
 * other: fast() does NA malloc(1 MiB)/free pairs back to back, slow() NB
 * of them with a spin between calls, so past a stack rate the first is
 * thinned far harder than the second.  A pause of 300 ms between them
 * (longer than two of the kernel's rate windows) lets the second start
 * from its own rate.  Prints "pid N ready", waits for
 * SIGUSR1, runs, prints "total FN BYTES CALLS" and "calls_per_sec FN X"
 * for each, and exits.
 *   alloc_phases [NA [NB [SPIN]]]    (default 100000 20000 20000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define MiB (1024UL * 1024)

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static NOINLINE void fast(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(MiB);

		sink += (unsigned long)p;
		free(p);
	}
}

static NOINLINE void slow(long n, long spin)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(MiB);

		sink += (unsigned long)p;
		free(p);
		for (long j = 0; j < spin; j++)
			sink += (unsigned long)j;
	}
}

int main(int argc, char **argv)
{
	long na = argc > 1 ? atol(argv[1]) : 100000;
	long nb = argc > 2 ? atol(argv[2]) : 20000;
	long spin = argc > 3 ? atol(argv[3]) : 20000;
	double a, b, c;

	ready_then_wait(stdout);
	a = now();
	fast(na);
	nanosleep(&(struct timespec){ .tv_nsec = 300 * 1000 * 1000 }, NULL);
	b = now();
	slow(nb, spin);
	c = now();
	printf("total fast %lu %ld\n", (unsigned long)na * MiB, na);
	printf("total slow %lu %ld\n", (unsigned long)nb * MiB, nb);
	printf("calls_per_sec fast %.0f\n", b > a ? (double)na / (b - a) : 0);
	printf("calls_per_sec slow %.0f\n", c > b ? (double)nb / (c - b) : 0);
	return 0;
}
