// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A steady allocator, for rates over a window: steady() allocates BYTES per
 * second, 100 times a second, in 256-byte blocks freed at once; held()
 * keeps HELD bytes live (allocated once, before "ready").  Ticks are on
 * absolute deadlines, so the long-run rate is exact whatever a tick costs.
 * Prints "pid N ready" and runs until killed; with LOG, after each tick
 * "at NS BYTES": the wall clock (CLOCK_REALTIME, ns) and the bytes steady()
 * allocated so far, the truth of any window however the machine delays it.
 *   alloc_steady [BYTES [HELD [log]]]    (default 4 MiB/s, 0 held)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa))
#define BLOCK 256

static volatile unsigned long sink;

static NOINLINE void steady(unsigned long bytes)
{
	unsigned long i;

	for (i = 0; i < bytes / BLOCK; i++) {
		char *p = malloc(BLOCK);

		sink += (unsigned long)p;
		free(p);
	}
}

static NOINLINE void held(unsigned long bytes)
{
	unsigned long i;

	for (i = 0; i < bytes / BLOCK; i++)
		sink += (unsigned long)malloc(BLOCK);
}

int main(int argc, char **argv)
{
	unsigned long rate = argc > 1 ? strtoul(argv[1], NULL, 0) : 4UL << 20;
	int log = argc > 3;
	unsigned long total = 0;
	struct timespec next, now;

	held(argc > 2 ? strtoul(argv[2], NULL, 0) : 0);
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		steady(rate / 100);
		total += rate / 100 / BLOCK * BLOCK;
		if (log) {
			clock_gettime(CLOCK_REALTIME, &now);
			printf("at %lld %lu\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec,
			       total);
			fflush(stdout);
		}
		next.tv_nsec += 10 * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
}
