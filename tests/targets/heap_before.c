// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Memory allocated before a profiler attaches and during its capture, in
 * known amounts, for the capture's heap-vs-RSS statement.
 *
 *   heap_before BEFORE_MIB DURING_MIB
 *
 * Allocates BEFORE_MIB MiB in 4 KiB blocks (malloc's brk heap: below the
 * mmap threshold), touches every page and keeps them; prints "pid N ready"
 * and waits for SIGUSR1; then allocates DURING_MIB MiB the same way, prints
 * "live BEFORE DURING" (bytes) and "done", and sleeps until killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define BLOCK 4096UL

static NOINLINE unsigned long fill(unsigned long mib)
{
	unsigned long i, n = mib * (1UL << 20) / BLOCK;

	for (i = 0; i < n; i++) {
		char *p = malloc(BLOCK);

		if (!p)
			exit(1);
		/* resident, as a heap in use is; never freed */
		memset(p, 1, BLOCK);
	}
	return n * BLOCK;
}

int main(int argc, char **argv)
{
	struct timespec hour = { 3600, 0 };
	unsigned long before, during;

	if (argc < 3)
		return 2;
	before = fill(strtoul(argv[1], NULL, 10));
	ready_then_wait(stdout);
	during = fill(strtoul(argv[2], NULL, 10));
	printf("live %lu %lu\ndone\n", before, during);
	fflush(stdout);
	for (;;)
		nanosleep(&hour, NULL);
}
